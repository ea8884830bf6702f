/* Collectives among the devices of jx.pmap: one thread per local device, data
 * exchanged in shared memory; across processes the local leader (device 0)
 * calls hooks (MPI by default when jx runs under mpirun).
 *
 * A pmap step is jx_pmap_run(entry, n, ...): n threads (device 0 is the caller,
 * the others persist between steps) each run the compiled per-device entry on
 * their own shard; a collective kernel in the entry calls
 * jx_coll_* below, which find the team and the device through thread-local
 * state. Every collective is "publish buffer pointers, barrier, copy/reduce a
 * share of the data directly between the devices' buffers, barrier", so the
 * data is read and written once with all threads working. Barriers spin
 * briefly, then sleep on a condition variable with a deadline: a device that
 * never arrives (a bug, a failed device, a rank that took another path) makes
 * the collective fail after JX_COLLECTIVE_TIMEOUT seconds (default 300) with
 * a message instead of hanging; a failed device aborts its team at once. Each
 * kernel passes the axis size it was compiled for, checked against devices x
 * ranks. An entry called outside jx_pmap_run is one device of its process.
 *
 * The C ABI for multi-process use (see the README, "Data parallelism"; an
 * artifact exports these as P_pmap_run, P_set_collective_hooks, ... under its
 * prefix P):
 *
 *   typedef struct jx_collective_hooks {
 *       void *user; int32_t rank, nranks;
 *       int32_t (*allreduce)(void *user, const void *send, void *recv, int64_t count,
 *                            int32_t dtype, int32_t op);
 *       int32_t (*allgather)(void *user, const void *send, void *recv, int64_t bytes);
 *       int32_t (*alltoall)(void *user, const void *send, void *recv, int64_t bytes);
 *   } jx_collective_hooks;
 *   void jx_set_collective_hooks(const jx_collective_hooks *hooks);   // NULL: one process
 *
 * allreduce combines `count` elements (dtype, op codes below) of every rank into
 * recv; allgather concatenates `bytes` from each rank, in rank order, into recv;
 * alltoall sends the r-th `bytes`-sized block of send to rank r and receives
 * rank r's block for us into the r-th block of recv. Hooks return 0 on success.
 * They are called by one thread per process (the leader), one call at a time,
 * in the same order on every rank. jx_use_mpi() installs hooks that call an MPI
 * library through function pointers (what jx does from Python via mpi4py).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Hidden in an artifact, like the thread pool's (jx_parallel.c, included first):
 * C users call the artifact's P_pmap_run, P_set_collective_hooks, ... */
#define JXC_API JX_PUBLIC

enum { JXC_F32, JXC_F64, JXC_I32, JXC_I64, JXC_U32, JXC_U64, JXC_I8, JXC_U8, JXC_I16,
       JXC_U16, JXC_BOOL, JXC_NTYPES };
enum { JXC_SUM, JXC_MAX, JXC_MIN };
enum { JXC_OK = 0, JXC_ERR = 6 };
#define JXC_MAX_DEVICES 1024
#define JXC_SPINS 512

typedef struct jx_collective_hooks {
    void *user;
    int32_t rank, nranks;
    int32_t (*allreduce)(void *user, const void *send, void *recv, int64_t count,
                         int32_t dtype, int32_t op);
    int32_t (*allgather)(void *user, const void *send, void *recv, int64_t bytes);
    int32_t (*alltoall)(void *user, const void *send, void *recv, int64_t bytes);
} jx_collective_hooks;

typedef struct jxc_team {
    int n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned gen;
    int abort;
    double timeout;
    const void *ins[JXC_MAX_DEVICES];
    void *outs[JXC_MAX_DEVICES];
    char *scratch;
    size_t scratch_size;
} jxc_team;

static jx_collective_hooks jxc_hooks = {NULL, 0, 1, NULL, NULL, NULL};
static __thread jxc_team *jxc_cur;
static __thread int jxc_dev;
static __thread jxc_team *jxc_solo;          /* entries called outside jx_pmap_run */
static pthread_mutex_t jxc_err_mu = PTHREAD_MUTEX_INITIALIZER;
static char jxc_err[1024];
static double jxc_timeout_override = -1;

static const int jxc_size[JXC_NTYPES] = {4, 8, 4, 8, 4, 8, 1, 1, 2, 2, 1};
static const char *jxc_type_name[JXC_NTYPES] = {"float32", "float64", "int32", "int64",
    "uint32", "uint64", "int8", "uint8", "int16", "uint16", "bool"};

static void jxc_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&jxc_err_mu);
    if (!jxc_err[0]) vsnprintf(jxc_err, sizeof jxc_err, fmt, ap);
    pthread_mutex_unlock(&jxc_err_mu);
    va_end(ap);
}

/* The first error since the last jx_coll_clear_error(), or "" (for messages). */
JXC_API const char *jx_coll_last_error(void) { return jxc_err; }
JXC_API void jx_coll_clear_error(void) {
    pthread_mutex_lock(&jxc_err_mu);
    jxc_err[0] = 0;
    pthread_mutex_unlock(&jxc_err_mu);
}
JXC_API void jx_coll_set_timeout(double seconds) { jxc_timeout_override = seconds; }

JXC_API void jx_set_collective_hooks(const jx_collective_hooks *hooks) {
    jx_collective_hooks none = {NULL, 0, 1, NULL, NULL, NULL};
    jxc_hooks = hooks ? *hooks : none;
}

static double jxc_default_timeout(void) {
    if (jxc_timeout_override > 0) return jxc_timeout_override;
    const char *env = getenv("JX_COLLECTIVE_TIMEOUT");
    double t = env ? strtod(env, NULL) : 0;
    return t > 0 ? t : 300.0;
}

static void jxc_team_init(jxc_team *t, int n) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->timeout = jxc_default_timeout();
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
}

static void jxc_team_abort(jxc_team *t) {
    pthread_mutex_lock(&t->mu);
    __atomic_store_n(&t->abort, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Wait until all n devices arrive; nonzero if the team was aborted or timed out. */
static int jxc_barrier(jxc_team *t, const char *what) {
    if (__atomic_load_n(&t->abort, __ATOMIC_ACQUIRE)) return JXC_ERR;
    if (t->n == 1) return JXC_OK;
    unsigned gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&t->arrived, 1, __ATOMIC_ACQ_REL) == t->n) {
        __atomic_store_n(&t->arrived, 0, __ATOMIC_RELAXED);
        pthread_mutex_lock(&t->mu);
        __atomic_store_n(&t->gen, gen + 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        return JXC_OK;
    }
    for (int i = 0; i < JXC_SPINS; i++) {
        if (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) != gen) return JXC_OK;
        if (__atomic_load_n(&t->abort, __ATOMIC_ACQUIRE)) return JXC_ERR;
        if ((i & 15) == 15) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    double whole = (double)(long)t->timeout;
    deadline.tv_sec += (long)whole;
    deadline.tv_nsec += (long)((t->timeout - whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    int rc = JXC_OK;
    pthread_mutex_lock(&t->mu);
    while (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) == gen && !t->abort) {
        if (pthread_cond_timedwait(&t->cv, &t->mu, &deadline) == ETIMEDOUT &&
            __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) == gen) {
            jxc_error("jx collective %s: device %ld of %ld waited %.0f s for the other devices "
                      "to reach the same collective and gave up (a device failed, is stuck, "
                      "or runs a different program); set JX_COLLECTIVE_TIMEOUT to wait longer",
                      what, (long)jxc_dev, (long)t->n, t->timeout);
            t->abort = 1;
            pthread_cond_broadcast(&t->cv);
        }
    }
    if (t->abort) rc = JXC_ERR;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static jxc_team *jxc_team_here(void) {
    if (jxc_cur) return jxc_cur;
    if (!jxc_solo) {           /* one device per process: e.g. an artifact called from C */
        jxc_solo = (jxc_team *)malloc(sizeof(jxc_team));
        if (!jxc_solo) return NULL;
        jxc_team_init(jxc_solo, 1);
    }
    jxc_dev = 0;
    return jxc_solo;
}

/* Scratch shared by the team, grown by the leader before the first barrier. */
static int jxc_scratch(jxc_team *t, size_t bytes) {
    if (jxc_dev != 0 || t->scratch_size >= bytes) return JXC_OK;
    free(t->scratch);
    t->scratch = (char *)malloc(bytes ? bytes : 1);
    t->scratch_size = t->scratch ? bytes : 0;
    if (!t->scratch) {
        jxc_error("jx collective: could not allocate %zu bytes of scratch memory", bytes);
        jxc_team_abort(t);
        return JXC_ERR;
    }
    return JXC_OK;
}

static int jxc_hook_failed(jxc_team *t, const char *what, int32_t status) {
    jxc_error("jx collective %s: the cross-process hook failed with status %d (rank %d)",
              what, (int)status, (int)jxc_hooks.rank);
    jxc_team_abort(t);
    return JXC_ERR;
}

/* The axis a kernel was compiled for must span this run's devices exactly. */
static int jxc_check_size(jxc_team *t, const char *what, int32_t size) {
    if ((int64_t)t->n * jxc_hooks.nranks == size) return JXC_OK;
    jxc_error("jx collective %s: the program was compiled for an axis of %d devices, but it "
              "runs on %d device thread(s) x %d process(es); run it with jx_pmap_run on "
              "that many devices (and the hooks of that many ranks)", what, (int)size, t->n,
              (int)jxc_hooks.nranks);
    jxc_team_abort(t);
    return JXC_ERR;
}

/* ------------------------------------------------------------ reductions */

/* NaN propagates through max/min, as in the NumPy reference (a != a: a NaN). */
#define JXC_GT(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define JXC_LT(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#define JXC_REDUCE(T)                                                                 \
    static void jxc_reduce_##T(void *dst, const void *const *srcs, int n, int64_t lo, \
                               int64_t hi, int op) {                                  \
        T *o = (T *)dst + lo;                                                         \
        int64_t m = hi - lo;                                                          \
        memcpy(o, (const T *)srcs[0] + lo, (size_t)m * sizeof(T));                    \
        for (int j = 1; j < n; j++) {                                                 \
            const T *s = (const T *)srcs[j] + lo;                                     \
            if (op == JXC_SUM)                                                        \
                for (int64_t i = 0; i < m; i++) o[i] = (T)(o[i] + s[i]);              \
            else if (op == JXC_MAX)                                                   \
                for (int64_t i = 0; i < m; i++) o[i] = JXC_GT(o[i], s[i]);            \
            else                                                                      \
                for (int64_t i = 0; i < m; i++) o[i] = JXC_LT(o[i], s[i]);            \
        }                                                                             \
    }
typedef unsigned char jxc_u8;
typedef signed char jxc_i8;
JXC_REDUCE(float)
JXC_REDUCE(double)
JXC_REDUCE(int32_t)
JXC_REDUCE(int64_t)
JXC_REDUCE(uint32_t)
JXC_REDUCE(uint64_t)
JXC_REDUCE(jxc_i8)
JXC_REDUCE(jxc_u8)
JXC_REDUCE(int16_t)
JXC_REDUCE(uint16_t)

static void jxc_reduce(int dtype, void *dst, const void *const *srcs, int n, int64_t lo,
                       int64_t hi, int op) {
    if (hi <= lo) return;
    switch (dtype) {
    case JXC_F32: jxc_reduce_float(dst, srcs, n, lo, hi, op); break;
    case JXC_F64: jxc_reduce_double(dst, srcs, n, lo, hi, op); break;
    case JXC_I32: jxc_reduce_int32_t(dst, srcs, n, lo, hi, op); break;
    case JXC_I64: jxc_reduce_int64_t(dst, srcs, n, lo, hi, op); break;
    case JXC_U32: jxc_reduce_uint32_t(dst, srcs, n, lo, hi, op); break;
    case JXC_U64: jxc_reduce_uint64_t(dst, srcs, n, lo, hi, op); break;
    case JXC_I8: jxc_reduce_jxc_i8(dst, srcs, n, lo, hi, op); break;
    case JXC_I16: jxc_reduce_int16_t(dst, srcs, n, lo, hi, op); break;
    case JXC_U16: jxc_reduce_uint16_t(dst, srcs, n, lo, hi, op); break;
    default: jxc_reduce_jxc_u8(dst, srcs, n, lo, hi, op); break;   /* u8, bool */
    }
}

/* This device's share [lo, hi) of count elements, cut at 64-byte boundaries. */
static void jxc_share(int64_t count, int itemsize, int n, int d, int64_t *lo, int64_t *hi) {
    int64_t align = 64 / itemsize;
    int64_t per = (count + n - 1) / n;
    per = (per + align - 1) / align * align;
    *lo = per * d < count ? per * d : count;
    *hi = per * (d + 1) < count ? per * (d + 1) : count;
}

/* psum / pmax / pmin: every device's out = op over devices (and ranks) of in. */
JXC_API int32_t jx_coll_allreduce(const void *in, void *out, int64_t count, int32_t dtype,
                                  int32_t op, int32_t size) {
    jxc_team *t = jxc_team_here();
    if (!t || jxc_check_size(t, "allreduce", size)) return JXC_ERR;
    int n = t->n, d = jxc_dev, sz = jxc_size[dtype];
    int ranks = jxc_hooks.nranks > 1;
    if (ranks && n == 1) {           /* one device per process: straight to the hook */
        int32_t s = count ? jxc_hooks.allreduce(jxc_hooks.user, in, out, count, dtype, op) : 0;
        return s ? jxc_hook_failed(t, "allreduce", s) : JXC_OK;
    }
    if (ranks && jxc_scratch(t, (size_t)count * sz)) return JXC_ERR;
    t->ins[d] = in;
    t->outs[d] = out;
    if (jxc_barrier(t, "allreduce")) return JXC_ERR;
    int64_t lo, hi;
    jxc_share(count, sz, n, d, &lo, &hi);
    if (!ranks) {
        jxc_reduce(dtype, out, t->ins, n, lo, hi, op);
        for (int j = 0; j < n; j++)
            if (j != d && hi > lo) memcpy((char *)t->outs[j] + lo * sz, (char *)out + lo * sz,
                                          (size_t)(hi - lo) * sz);
        return jxc_barrier(t, "allreduce");
    }
    jxc_reduce(dtype, t->scratch, t->ins, n, lo, hi, op);
    if (jxc_barrier(t, "allreduce")) return JXC_ERR;
    if (d == 0 && count) {
        int32_t s = jxc_hooks.allreduce(jxc_hooks.user, t->scratch, out, count, dtype, op);
        if (s) return jxc_hook_failed(t, "allreduce", s);
    }
    if (jxc_barrier(t, "allreduce")) return JXC_ERR;
    if (d != 0 && count) memcpy(out, t->outs[0], (size_t)count * sz);
    return jxc_barrier(t, "allreduce");
}

/* all_gather: out = [in of device 0, in of device 1, ...] over every device. */
JXC_API int32_t jx_coll_allgather(const void *in, void *out, int64_t bytes, int32_t size) {
    jxc_team *t = jxc_team_here();
    if (!t || jxc_check_size(t, "all_gather", size)) return JXC_ERR;
    int n = t->n, d = jxc_dev;
    int ranks = jxc_hooks.nranks > 1;
    if (ranks && n == 1) {
        int32_t s = bytes ? jxc_hooks.allgather(jxc_hooks.user, in, out, bytes) : 0;
        return s ? jxc_hook_failed(t, "all_gather", s) : JXC_OK;
    }
    if (ranks && jxc_scratch(t, (size_t)bytes * n)) return JXC_ERR;
    t->ins[d] = in;
    t->outs[d] = out;
    if (jxc_barrier(t, "all_gather")) return JXC_ERR;
    if (!ranks) {
        for (int j = 0; j < n; j++)
            if (bytes) memcpy((char *)out + (size_t)j * bytes, t->ins[j], (size_t)bytes);
        return jxc_barrier(t, "all_gather");
    }
    if (bytes) memcpy(t->scratch + (size_t)d * bytes, in, (size_t)bytes);
    if (jxc_barrier(t, "all_gather")) return JXC_ERR;
    if (d == 0 && bytes) {
        int32_t s = jxc_hooks.allgather(jxc_hooks.user, t->scratch, out, bytes * n);
        if (s) return jxc_hook_failed(t, "all_gather", s);
    }
    if (jxc_barrier(t, "all_gather")) return JXC_ERR;
    if (d != 0 && bytes) memcpy(out, t->outs[0], (size_t)bytes * n * jxc_hooks.nranks);
    return jxc_barrier(t, "all_gather");
}

/* all_to_all on (devices, chunk) arrays: out[j] = in_j[me] for every device j. */
JXC_API int32_t jx_coll_alltoall(const void *in, void *out, int64_t chunk, int32_t size) {
    jxc_team *t = jxc_team_here();
    if (!t || jxc_check_size(t, "all_to_all", size)) return JXC_ERR;
    int n = t->n, d = jxc_dev, p = jxc_hooks.nranks;
    size_t c = (size_t)chunk, block = c * n * n;     /* bytes one rank sends another */
    if (p > 1 && jxc_scratch(t, 2 * block * p)) return JXC_ERR;
    t->ins[d] = in;
    t->outs[d] = out;
    if (jxc_barrier(t, "all_to_all")) return JXC_ERR;
    if (p <= 1) {
        for (int j = 0; j < n; j++)
            if (c) memcpy((char *)out + j * c, (const char *)t->ins[j] + d * c, c);
        return jxc_barrier(t, "all_to_all");
    }
    char *send = t->scratch, *recv = t->scratch + block * p;
    for (int r = 0; r < p; r++)      /* send[r][d][m] = my chunk for device (r, m) */
        if (c) memcpy(send + ((size_t)r * n + d) * n * c, (const char *)in + (size_t)r * n * c,
                      n * c);
    if (jxc_barrier(t, "all_to_all")) return JXC_ERR;
    if (d == 0 && c) {
        int32_t s = jxc_hooks.alltoall(jxc_hooks.user, send, recv, (int64_t)block);
        if (s) return jxc_hook_failed(t, "all_to_all", s);
    }
    if (jxc_barrier(t, "all_to_all")) return JXC_ERR;
    for (int g = 0; g < p * n; g++)  /* recv[r][l][m]: device (r, l)'s chunk for device m */
        if (c) memcpy((char *)out + g * c, recv + ((size_t)g * n + d) * c, c);
    return jxc_barrier(t, "all_to_all");
}

/* ppermute: out = in of device src[me] (global indices), zeros where src[me] < 0.
 * Across processes every rank gathers all inputs (simple; costs bandwidth). */
JXC_API int32_t jx_coll_ppermute(const void *in, void *out, int64_t bytes,
                                 const int32_t *src, int32_t size) {
    jxc_team *t = jxc_team_here();
    if (!t || jxc_check_size(t, "ppermute", size)) return JXC_ERR;
    int n = t->n, d = jxc_dev, p = jxc_hooks.nranks;
    int me = jxc_hooks.rank * n + d, from = src[me];
    if (p > 1 && jxc_scratch(t, (size_t)bytes * n * (p + 1))) return JXC_ERR;
    t->ins[d] = in;
    if (jxc_barrier(t, "ppermute")) return JXC_ERR;
    if (p <= 1) {
        if (bytes) {
            if (from < 0) memset(out, 0, (size_t)bytes);
            else memcpy(out, t->ins[from], (size_t)bytes);
        }
        return jxc_barrier(t, "ppermute");
    }
    char *all = t->scratch + (size_t)bytes * n;
    if (bytes) memcpy(t->scratch + (size_t)d * bytes, in, (size_t)bytes);
    if (jxc_barrier(t, "ppermute")) return JXC_ERR;
    if (d == 0 && bytes) {
        int32_t s = jxc_hooks.allgather(jxc_hooks.user, t->scratch, all, bytes * n);
        if (s) return jxc_hook_failed(t, "ppermute", s);
    }
    if (jxc_barrier(t, "ppermute")) return JXC_ERR;
    if (bytes) {
        if (from < 0) memset(out, 0, (size_t)bytes);
        else memcpy(out, all + (size_t)from * bytes, (size_t)bytes);
    }
    return jxc_barrier(t, "ppermute");
}

/* ------------------------------------------------------------ running a pmap step */

typedef int32_t (*jx_entry_fn)(const void **inputs, void **outputs);

typedef struct {
    jxc_team *team;
    int dev;
    jx_entry_fn fn;
    const void **ins;
    void **outs;
    int32_t status;
} jxc_job;

static void *jxc_device_main(void *arg) {
    jxc_job *job = (jxc_job *)arg;
    jxc_cur = job->team;
    jxc_dev = job->dev;
    job->status = job->fn(job->ins, job->outs);
    if (job->status) jxc_team_abort(job->team);   /* release devices waiting for us */
    jxc_cur = NULL;
    return NULL;
}

/* Device threads persist between steps (starting threads costs more than a
 * small step): worker k serves device k of every run; device 0 is the caller. */
static pthread_mutex_t jxc_run_mu = PTHREAD_MUTEX_INITIALIZER;   /* one run at a time */
static pthread_mutex_t jxc_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jxc_pool_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t jxc_pool_done = PTHREAD_COND_INITIALIZER;
static int jxc_pool_size = 1;          /* devices served: the caller + started workers */
static unsigned jxc_pool_gen = 0;
static int jxc_pool_n = 0, jxc_pool_pending = 0;
static jxc_job *jxc_pool_jobs = NULL;

static void *jxc_worker(void *arg) {
    int dev = (int)(intptr_t)arg;
    unsigned seen = 0;
    pthread_mutex_lock(&jxc_pool_mu);
    for (;;) {
        while (jxc_pool_gen == seen) pthread_cond_wait(&jxc_pool_start, &jxc_pool_mu);
        seen = jxc_pool_gen;
        if (dev >= jxc_pool_n) continue;
        jxc_job *job = &jxc_pool_jobs[dev];
        pthread_mutex_unlock(&jxc_pool_mu);
        jxc_device_main(job);
        pthread_mutex_lock(&jxc_pool_mu);
        if (--jxc_pool_pending == 0) pthread_cond_signal(&jxc_pool_done);
    }
    return NULL;
}

/* A forked child has none of the parent's device threads: start afresh. */
static void jxc_pool_after_fork(void) {
    pthread_mutex_init(&jxc_run_mu, NULL);
    pthread_mutex_init(&jxc_pool_mu, NULL);
    pthread_cond_init(&jxc_pool_start, NULL);
    pthread_cond_init(&jxc_pool_done, NULL);
    jxc_pool_size = 1;
    jxc_pool_n = jxc_pool_pending = 0;
}

static int jxc_pool_grow(int n) {
    static int fork_handler = 0;
    if (!fork_handler && n > 1) fork_handler = !pthread_atfork(NULL, NULL, jxc_pool_after_fork);
    while (jxc_pool_size < n) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&th, &attr, jxc_worker, (void *)(intptr_t)jxc_pool_size);
        pthread_attr_destroy(&attr);
        if (err) {
            jxc_error("jx_pmap_run: could not start the thread of device %d (of %d)",
                      jxc_pool_size, n);
            return JXC_ERR;
        }
        jxc_pool_size++;
    }
    return JXC_OK;
}

/* Run entry(inputs[d], outputs[d]) for d in [0, n), each on its own thread, as
 * one team: `inputs` is an n x n_in table of pointers, `outputs` n x n_out.
 * Returns 0, or the first failing device's status (message: jx_coll_last_error). */
JXC_API int32_t jx_pmap_run(jx_entry_fn fn, int32_t n, const void **inputs, int32_t n_in,
                            void **outputs, int32_t n_out) {
    if (n < 1 || n > JXC_MAX_DEVICES) {
        jxc_error("jx_pmap_run: %d devices requested, between 1 and %d supported",
                  (int)n, JXC_MAX_DEVICES);
        return JXC_ERR;
    }
    jxc_team *team = (jxc_team *)malloc(sizeof(jxc_team));
    jxc_job *jobs = (jxc_job *)calloc((size_t)n, sizeof(jxc_job));
    if (!team || !jobs) {
        free(team);
        free(jobs);
        return 1;
    }
    jxc_team_init(team, n);
    for (int d = 0; d < n; d++)
        jobs[d] = (jxc_job){team, d, fn, inputs + (size_t)d * n_in,
                            outputs + (size_t)d * n_out, 0};
    int32_t rc = 0;
    pthread_mutex_lock(&jxc_run_mu);
    pthread_mutex_lock(&jxc_pool_mu);
    if (jxc_pool_grow(n)) rc = JXC_ERR;
    else if (n > 1) {
        jxc_pool_jobs = jobs;
        jxc_pool_n = n;
        jxc_pool_pending = n - 1;
        jxc_pool_gen++;
        pthread_cond_broadcast(&jxc_pool_start);
    }
    pthread_mutex_unlock(&jxc_pool_mu);
    if (!rc) {
        jxc_device_main(&jobs[0]);
        pthread_mutex_lock(&jxc_pool_mu);
        while (jxc_pool_pending > 0) pthread_cond_wait(&jxc_pool_done, &jxc_pool_mu);
        jxc_pool_n = 0;
        pthread_mutex_unlock(&jxc_pool_mu);
        for (int d = 0; d < n && !rc; d++)
            if (jobs[d].status) rc = jobs[d].status;
    }
    pthread_mutex_unlock(&jxc_run_mu);
    pthread_mutex_destroy(&team->mu);
    pthread_cond_destroy(&team->cv);
    free(team->scratch);
    free(team);
    free(jobs);
    return rc;
}

/* ------------------------------------------------------------ hooks over MPI */

/* The MPI functions and handles jx_use_mpi needs, taken from the MPI library in
 * use (mpi4py's). Handles are passed as integers the width of a pointer: an MPI
 * whose handles are ints (MPICH) or pointers (Open MPI) both receive them
 * correctly in the integer argument registers / stack slots of LP64 ABIs. */
typedef struct jx_mpi_api {
    void *allreduce;     /* MPI_Allreduce */
    void *allgather;     /* MPI_Allgather */
    void *alltoall;      /* MPI_Alltoall */
    intptr_t comm;       /* the communicator */
    intptr_t byte_type;  /* MPI_BYTE */
    intptr_t types[JXC_NTYPES];   /* MPI datatypes of the jx dtype codes, 0: none */
    intptr_t ops[3];     /* MPI_SUM, MPI_MAX, MPI_MIN */
    int32_t rank, size;
} jx_mpi_api;

typedef int (*jxc_mpi_allreduce)(const void *, void *, int, intptr_t, intptr_t, intptr_t);
typedef int (*jxc_mpi_gather)(const void *, int, intptr_t, void *, int, intptr_t, intptr_t);
static jx_mpi_api jxc_mpi;

static int32_t jxc_mpi_allreduce_hook(void *user, const void *send, void *recv,
                                      int64_t count, int32_t dtype, int32_t op) {
    (void)user;
    intptr_t type = jxc_mpi.types[dtype];
    if (!type) return -1;
    const int64_t most = 1 << 30;          /* MPI counts are ints: go in pieces */
    for (int64_t at = 0; at < count; at += most) {
        int64_t m = count - at < most ? count - at : most;
        int s = ((jxc_mpi_allreduce)jxc_mpi.allreduce)(
            (const char *)send + at * jxc_size[dtype], (char *)recv + at * jxc_size[dtype],
            (int)m, type, jxc_mpi.ops[op], jxc_mpi.comm);
        if (s) return s;
    }
    return 0;
}

static int32_t jxc_mpi_gather_hook(void *fn, const void *send, void *recv, int64_t bytes) {
    if (bytes > 0x7fffffff) return -2;
    return ((jxc_mpi_gather)fn)(send, (int)bytes, jxc_mpi.byte_type, recv, (int)bytes,
                                jxc_mpi.byte_type, jxc_mpi.comm);
}

static int32_t jxc_mpi_allgather_hook(void *u, const void *s, void *r, int64_t bytes) {
    (void)u;
    return jxc_mpi_gather_hook(jxc_mpi.allgather, s, r, bytes);
}

static int32_t jxc_mpi_alltoall_hook(void *u, const void *s, void *r, int64_t bytes) {
    (void)u;
    return jxc_mpi_gather_hook(jxc_mpi.alltoall, s, r, bytes);
}

/* Install hooks calling MPI as described by api (NULL: back to one process). */
JXC_API void jx_use_mpi(const jx_mpi_api *api) {
    if (!api) { jx_set_collective_hooks(NULL); return; }
    jxc_mpi = *api;
    jx_collective_hooks h = {NULL, api->rank, api->size, jxc_mpi_allreduce_hook,
                             jxc_mpi_allgather_hook, jxc_mpi_alltoall_hook};
    jx_set_collective_hooks(&h);
}

JXC_API int32_t jx_coll_rank(void) { return jxc_hooks.rank; }
JXC_API int32_t jx_coll_nranks(void) { return jxc_hooks.nranks; }
JXC_API const char *jx_coll_type_name(int32_t code) {
    return code >= 0 && code < JXC_NTYPES ? jxc_type_name[code] : "?";
}
