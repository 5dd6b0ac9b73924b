"""Stand-in for srtctl.cli.submit (test fixture)."""


def generate_minimal_sbatch_script(config, config_path, setup_script=None):
    return "#!/bin/bash\n#SBATCH --nodes=3\n#SBATCH --ntasks=3\nsrtctl-sweep config.yaml\n"
