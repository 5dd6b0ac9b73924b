/* The state types of harness/client/_fastread.c (FeedState, MeterState), the clock and the
 * pass meter's read: see that file's header comment. */
#include "_fastread.h"
#include <time.h>

/* ---- the clock: time.perf_counter's, to the bit ------------------------------------------ */

static PyObject *perf_counter = NULL; /* time.perf_counter, where it is not CLOCK_MONOTONIC */

int
fastread_now(double *out)
{
#if defined(__linux__)
    /* CPython 3.11 Python/pytime.c: perf_counter is the monotonic clock, clock_gettime
     * (CLOCK_MONOTONIC) on Linux, turned into seconds by _PyTime_AsSecondsDouble: */
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
        long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        volatile double d;
        if (ns % 1000000000LL == 0) {
            d = (double)(ns / 1000000000LL);
        } else {
            d = (double)ns;
            d /= 1e9;
        }
        *out = d;
        return 0;
    }
#endif
    PyObject *r = PyObject_CallNoArgs(perf_counter);
    if (r == NULL) {
        return -1;
    }
    *out = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* ---- FeedState: what the steady read touches of a StreamAccumulator ---------------------- */

static PyObject *
feed_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    FeedState *self = (FeedState *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->read_ts = PyList_New(0);
    self->pend = PyList_New(0);
    if (self->read_ts == NULL || self->pend == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
feed_traverse(FeedState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->read_ts);
    Py_VISIT(self->pend);
    return 0;
}

static int
feed_clear(FeedState *self)
{
    Py_CLEAR(self->read_ts);
    Py_CLEAR(self->pend);
    return 0;
}

static void
feed_dealloc(FeedState *self)
{
    PyObject_GC_UnTrack(self);
    feed_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef feed_members[] = {
    {"read_ts", T_OBJECT_EX, offsetof(FeedState, read_ts), 0, "one stamp per read"},
    {"_pend", T_OBJECT_EX, offsetof(FeedState, pend), 0, "pending reads past the head"},
    {"_pend_len", T_PYSSIZET, offsetof(FeedState, pend_len), 0, "bytes in _pend"},
    {"_steady", T_BOOL, offsetof(FeedState, steady), 0, "a one-event read takes the short path"},
    {NULL},
};

PyTypeObject FeedStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness.client._fastread.FeedState",
    .tp_basicsize = sizeof(FeedState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = feed_new,
    .tp_traverse = (traverseproc)feed_traverse,
    .tp_clear = (inquiry)feed_clear,
    .tp_dealloc = (destructor)feed_dealloc,
    .tp_members = feed_members,
    .tp_doc = "The StreamAccumulator state the compiled steady read updates.",
};

/* ---- MeterState: the pass meter's per-read state ----------------------------------------- */

static PyObject *
meter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    MeterState *self = (MeterState *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->loop = Py_NewRef(Py_None);
    self->ctx = Py_NewRef(Py_None);
    self->hist = PyList_New(0);
    self->over = PyList_New(0);
    if (self->hist == NULL || self->over == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
meter_traverse(MeterState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->loop);
    Py_VISIT(self->hist);
    Py_VISIT(self->over);
    Py_VISIT(self->close_cb);
    Py_VISIT(self->ctx);
    return 0;
}

static int
meter_clear(MeterState *self)
{
    Py_CLEAR(self->loop);
    Py_CLEAR(self->hist);
    Py_CLEAR(self->over);
    Py_CLEAR(self->close_cb);
    Py_CLEAR(self->ctx);
    return 0;
}

static PyObject *
meter_close(MeterState *self, PyObject *unused)
{
    self->open = 0; /* the pass ended: the loop ran this after the pass's I/O callbacks */
    Py_RETURN_NONE;
}

static PyMethodDef meter_methods[] = {
    {"_close", (PyCFunction)meter_close, METH_NOARGS, "End the open pass."},
    {NULL},
};

static void
meter_dealloc(MeterState *self)
{
    PyObject_GC_UnTrack(self);
    meter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef meter_members[] = {
    {"_loop", T_OBJECT, offsetof(MeterState, loop), 0, "the running loop; None: stopped"},
    {"_ctx", T_OBJECT, offsetof(MeterState, ctx), 0, "the context _close runs in"},
    {"hist", T_OBJECT_EX, offsetof(MeterState, hist), 0, "reads per 20 us offset bin"},
    {"over", T_OBJECT_EX, offsetof(MeterState, over), 0, "offsets beyond the bins, s"},
    {"_t0", T_DOUBLE, offsetof(MeterState, t0), 0, "the open pass's first read"},
    {"_open", T_BOOL, offsetof(MeterState, open), 0, "a pass is open"},
    {NULL},
};

PyTypeObject MeterStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness.client._fastread.MeterState",
    .tp_basicsize = sizeof(MeterState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = meter_new,
    .tp_traverse = (traverseproc)meter_traverse,
    .tp_clear = (inquiry)meter_clear,
    .tp_dealloc = (destructor)meter_dealloc,
    .tp_members = meter_members,
    .tp_methods = meter_methods,
    .tp_doc = "The PassMeter state a compiled read counts into.",
};

static PyObject *str_read_meter = NULL, *str_close = NULL, *str_call_soon = NULL;
static PyObject *kw_context = NULL; /* ("context",) */

/* hist[i] += 1. 1: done; 0: not a list this long (the Python method then); -1: an error. */
static int
bump(PyObject *hist, long long i)
{
    if (i < 0 || i >= 50000 || !PyList_CheckExact(hist) || i >= PyList_GET_SIZE(hist)) {
        return 0;
    }
    PyObject *old = PyList_GET_ITEM(hist, i);
    long long v = PyLong_AsLongLong(old);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    PyObject *bumped = PyLong_FromLongLong(v + 1);
    if (bumped == NULL) {
        return -1;
    }
    PyList_SET_ITEM(hist, i, bumped);
    Py_DECREF(old);
    return 1;
}

/* PassMeter.read(t), as loop_passes.py has it; an offset beyond the bins by the Python
 * method. */
int
fastread_meter_read(PyObject *meter, double t)
{
    if (meter == NULL || meter == Py_None) {
        return 0;
    }
    if (PyObject_TypeCheck(meter, &MeterStateType)) {
        MeterState *m = (MeterState *)meter;
        int done;
        if (m->open) {
            done = bump(m->hist, (long long)((t - m->t0) * 50000.0)); /* int() of a float >= 0 */
            if (done != 0) {
                return done;
            }
        } else if (m->loop == NULL || m->loop == Py_None) {
            return 0; /* stopped */
        } else if (PyList_CheckExact(m->hist) && PyList_GET_SIZE(m->hist) > 0) {
            /* A pass begins: it ends when a callback scheduled now runs. */
            m->open = 1;
            m->t0 = t;
            if (m->close_cb == NULL && (m->close_cb = PyObject_GetAttr(meter, str_close)) == NULL) {
                return -1;
            }
            /* loop.call_soon(self._close, context=self._ctx): given a context, the loop
             * does not copy the current one for every pass (loop_passes.py, start). */
            PyObject *args[3] = {m->loop, m->close_cb, m->ctx};
            int given = m->ctx != NULL && m->ctx != Py_None;
            PyObject *r = PyObject_VectorcallMethod(str_call_soon, args, 2,
                                                    given ? kw_context : NULL);
            if (r == NULL) {
                return -1;
            }
            Py_DECREF(r);
            return bump(m->hist, 0) < 0 ? -1 : 0;
        }
    }
    PyObject *ts = PyFloat_FromDouble(t);
    if (ts == NULL) {
        return -1;
    }
    PyObject *r = PyObject_CallMethodOneArg(meter, str_read_meter, ts);
    Py_DECREF(ts);
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

int
fastread_state_init(PyObject *m)
{
    if (PyType_Ready(&FeedStateType) < 0 || PyType_Ready(&MeterStateType) < 0) {
        return -1;
    }
    str_read_meter = PyUnicode_InternFromString("read");
    str_close = PyUnicode_InternFromString("_close");
    str_call_soon = PyUnicode_InternFromString("call_soon");
    kw_context = Py_BuildValue("(s)", "context");
    PyObject *time_mod = PyImport_ImportModule("time");
    if (str_read_meter == NULL || str_close == NULL || str_call_soon == NULL
            || kw_context == NULL || time_mod == NULL) {
        Py_XDECREF(time_mod);
        return -1;
    }
    perf_counter = PyObject_GetAttrString(time_mod, "perf_counter");
    Py_DECREF(time_mod);
    if (perf_counter == NULL
            || PyModule_AddObjectRef(m, "FeedState", (PyObject *)&FeedStateType) < 0
            || PyModule_AddObjectRef(m, "MeterState", (PyObject *)&MeterStateType) < 0) {
        return -1;
    }
    return 0;
}
