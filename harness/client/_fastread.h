/* What harness/client/_fastread.c and _fastread_state.c share: the state types a compiled
 * read updates (the accumulator's and the pass meter's), the clock, the meter's read. */
#ifndef HARNESS_FASTREAD_H
#define HARNESS_FASTREAD_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* FeedState: what the steady read touches of a StreamAccumulator (sse.py) */
typedef struct {
    PyObject_HEAD
    PyObject *read_ts; /* list of float: one stamp per read */
    PyObject *pend;    /* list of bytes: reads past the head not yet trimmed */
    Py_ssize_t pend_len;
    char steady;
} FeedState;

/* MeterState: the pass meter's per-read state (loop_passes.py) */
typedef struct {
    PyObject_HEAD
    PyObject *loop; /* None while stopped */
    PyObject *hist; /* list of int, 50,000 bins of 20 us */
    PyObject *over; /* list of float */
    PyObject *close_cb; /* self._close, bound once */
    PyObject *ctx;      /* the context _close runs in (None: the loop copies the current one) */
    double t0;
    char open;
} MeterState;

extern PyTypeObject FeedStateType;
extern PyTypeObject MeterStateType;

/* time.perf_counter(), without a call into Python where it is CLOCK_MONOTONIC. 0 or -1. */
int fastread_now(double *out);
/* PassMeter.read(t) for a MeterState (or any object with a `read`). 0 or -1 (an error set). */
int fastread_meter_read(PyObject *meter, double t);
/* Ready both types, add them to the module, bind what they call. 0 or -1. */
int fastread_state_init(PyObject *module);

#endif
