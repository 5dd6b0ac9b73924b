/* The httptools transport's steady read, compiled (docs/client.md, "The compiled read").
 *
 * At one SSE event per server write every event is its own socket read, and the Python work
 * around each read (the protocol's data_received, the pass meter, the accumulator's steady
 * branch: three interpreter frames) cost more than the kernel's part of it. Here that work
 * is done in C for the read that dominates a stream: one whole HTTP chunk holding one whole
 * `data: {...}\n\n` event, the accumulator past its head. Every other read goes to the
 * Python path (harness/client/h1_conn.py `_Conn._read`), which feeds llhttp.
 *
 * Three base types hold the state both paths share, as C members the Python code reads and
 * writes by name: ConnState (of h1_conn._Conn), FeedState (of sse.StreamAccumulator) and
 * MeterState (of loop_passes.PassMeter). harness/client/read_state.py has their pure-Python
 * twins, used where this module is not built; the semantics are the Python code's, line for
 * line (tests/test_fastread.py feeds both the same reads and compares everything kept).
 *
 * Why llhttp may be skipped for such a read: `_Conn._read` sets `_boundary` only when llhttp's
 * last chunk callback in a read was on_chunk_complete (fired after a chunk's closing CRLF,
 * llhttp's `chunk_data_almost_done`) and the read ended with CRLF: bytes after that callback
 * could only be an unfinished size line, and a size line ending CRLF is finished (llhttp would
 * have called on_chunk_header). llhttp is then between chunks, and a read that is exactly one
 * chunk, `HEX\r\nDATA\r\n` with len(DATA) == HEX (no extensions), leaves it there again:
 * skipping it changes nothing llhttp would have done but hand DATA to on_body.
 */
#include "_fastread.h"
#include <string.h>

static PyObject *str_read = NULL, *str_trim = NULL, *str_failed = NULL;

/* ---- ConnState: the connection's read ---------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *feed;  /* the parser's feed_data; None: no reply is being read */
    PyObject *acc;   /* the request's StreamAccumulator, or None */
    PyObject *raw;   /* the sampled reads' sink, or None */
    PyObject *meter; /* the process's PassMeter, or None */
    double last;     /* the last read's stamp */
    int chunk_cb;    /* llhttp's last chunk callback in this read: 0 none, 1 header, 2 complete */
    char boundary;   /* llhttp is between chunks: a whole chunk may skip it */
    char any;        /* a byte of the reply came */
} ConnState;

static int
conn_traverse(ConnState *self, visitproc visit, void *arg)
{
    Py_VISIT(self->feed);
    Py_VISIT(self->acc);
    Py_VISIT(self->raw);
    Py_VISIT(self->meter);
    return 0;
}

static int
conn_clear(ConnState *self)
{
    Py_CLEAR(self->feed);
    Py_CLEAR(self->acc);
    Py_CLEAR(self->raw);
    Py_CLEAR(self->meter);
    return 0;
}

static void
conn_dealloc(ConnState *self)
{
    PyObject_GC_UnTrack(self);
    conn_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* One whole chunk holding one whole event, taken as StreamAccumulator.feed's first branch
 * takes it. 1: taken; 0: not this read's shape; -1: an error is set. */
static int
steady_read(ConnState *self, PyObject *data, double t)
{
    if (!self->boundary || self->feed == NULL || self->feed == Py_None || self->acc == NULL
            || !PyObject_TypeCheck(self->acc, &FeedStateType) || !PyBytes_CheckExact(data)) {
        return 0;
    }
    FeedState *acc = (FeedState *)self->acc;
    if (!acc->steady || !PyList_CheckExact(acc->read_ts) || !PyList_CheckExact(acc->pend)) {
        return 0;
    }
    const char *p = PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data), i = 0, size = 0;
    int h;
    while (i < n && i < 7 && (h = hexval(p[i])) >= 0) { /* under 256 MiB: no overflow */
        size = size * 16 + h;
        i++;
    }
    if (i == 0 || size < 3 || i + 2 + size + 2 != n || p[i] != '\r' || p[i + 1] != '\n'
            || p[n - 2] != '\r' || p[n - 1] != '\n') {
        return 0;
    }
    const char *b = p + i + 2; /* the chunk's data: one event `d...}\n\n`, its first "\n" the
                                  terminator's, as sse.py's first branch asks */
    if (b[0] != 'd' || b[size - 1] != '\n' || b[size - 3] != '}'
            || memchr(b, '\n', size) != b + size - 2) {
        return 0;
    }
    PyObject *ts = PyFloat_FromDouble(t);
    PyObject *body = ts == NULL ? NULL : PyBytes_FromStringAndSize(b, size);
    int rc = -1;
    if (body == NULL || PyList_Append(acc->read_ts, ts) < 0
            || PyList_Append(acc->pend, body) < 0) {
        goto done;
    }
    self->any = 1;
    acc->pend_len += size;
    if (acc->pend_len > 32768) { /* sse.py: 2 * _TAIL_BYTES; an event completed: trim */
        PyObject *r = PyObject_CallMethodNoArgs((PyObject *)acc, str_trim);
        if (r == NULL) {
            goto done;
        }
        Py_DECREF(r);
    }
    if (self->raw != NULL && self->raw != Py_None) {
        /* A sampled request (RequestSpec.keep_raw): the read, as _ConnBody._take hands it on
         * after the accumulator's feed. Taken here too, so that a sampled request costs what
         * the others cost (benchmarks sample one request in 50). */
        PyObject *pair = PyTuple_Pack(2, ts, body);
        PyObject *r = pair == NULL ? NULL : PyObject_CallOneArg(self->raw, pair);
        Py_XDECREF(pair);
        if (r == NULL) {
            goto done;
        }
        Py_DECREF(r);
    }
    rc = 1;
done:
    Py_XDECREF(ts);
    Py_XDECREF(body);
    return rc;
}

/* An exception in our accounting fails the request (the Python path's _accounting_failed),
 * never the connection's reader. */
static PyObject *
accounting_failed(ConnState *self)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value == NULL) {
        value = Py_NewRef(Py_None);
    }
    PyObject *r = PyObject_CallMethodOneArg((PyObject *)self, str_failed, value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return r;
}

static PyObject *
conn_data_received(ConnState *self, PyObject *data)
{
    double t;
    if (fastread_now(&t) < 0) {
        return NULL;
    }
    self->last = t;
    if (fastread_meter_read(self->meter, t) < 0) {
        return NULL;
    }
    int taken = steady_read(self, data, t);
    if (taken > 0) {
        Py_RETURN_NONE;
    }
    if (taken < 0) {
        return accounting_failed(self);
    }
    PyObject *ts = PyFloat_FromDouble(t);
    if (ts == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethodObjArgs((PyObject *)self, str_read, data, ts, NULL);
    Py_DECREF(ts);
    return r;
}

static PyObject *
conn_on_chunk_header(ConnState *self, PyObject *unused)
{
    self->chunk_cb = 1;
    Py_RETURN_NONE;
}

static PyObject *
conn_on_chunk_complete(ConnState *self, PyObject *unused)
{
    self->chunk_cb = 2;
    Py_RETURN_NONE;
}

static PyMethodDef conn_methods[] = {
    {"data_received", (PyCFunction)conn_data_received, METH_O,
     "Stamp the read; take a steady one here, any other by self._read(data, t)."},
    {"on_chunk_header", (PyCFunction)conn_on_chunk_header, METH_NOARGS, "llhttp: a size line"},
    {"on_chunk_complete", (PyCFunction)conn_on_chunk_complete, METH_NOARGS,
     "llhttp: a chunk's closing CRLF"},
    {NULL},
};

static PyMemberDef conn_members[] = {
    {"_feed", T_OBJECT, offsetof(ConnState, feed), 0, "the parser's feed_data, or None"},
    {"_acc", T_OBJECT, offsetof(ConnState, acc), 0, "the request's accumulator, or None"},
    {"_raw", T_OBJECT, offsetof(ConnState, raw), 0, "the sampled reads' sink, or None"},
    {"_meter", T_OBJECT, offsetof(ConnState, meter), 0, "the pass meter, or None"},
    {"last", T_DOUBLE, offsetof(ConnState, last), 0, "the last read's stamp"},
    {"_chunk_cb", T_INT, offsetof(ConnState, chunk_cb), 0, "llhttp's last chunk callback"},
    {"_boundary", T_BOOL, offsetof(ConnState, boundary), 0, "llhttp is between chunks"},
    {"_any", T_BOOL, offsetof(ConnState, any), 0, "a byte of the reply came"},
    {NULL},
};

static PyTypeObject ConnStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness.client._fastread.ConnState",
    .tp_basicsize = sizeof(ConnState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)conn_traverse,
    .tp_clear = (inquiry)conn_clear,
    .tp_dealloc = (destructor)conn_dealloc,
    .tp_methods = conn_methods,
    .tp_members = conn_members,
    .tp_doc = "The connection state and read of h1_conn._Conn.",
};

/* ---- the module -------------------------------------------------------------------------- */

static struct PyModuleDef fastread_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "harness.client._fastread",
    .m_doc = "The httptools transport's steady read, compiled (harness/client/read_state.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__fastread(void)
{
    if (PyType_Ready(&ConnStateType) < 0) {
        return NULL;
    }
    str_read = PyUnicode_InternFromString("_read");
    str_trim = PyUnicode_InternFromString("_trim");
    str_failed = PyUnicode_InternFromString("_accounting_failed");
    if (str_read == NULL || str_trim == NULL || str_failed == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&fastread_module);
    if (m == NULL) {
        return NULL;
    }
    if (fastread_state_init(m) < 0
            || PyModule_AddObjectRef(m, "ConnState", (PyObject *)&ConnStateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
