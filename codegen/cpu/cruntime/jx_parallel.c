/* The parallel runtime linked into every jx artifact (and loaded by jx.jit):
 * a persistent pool of worker threads that runs `fn(ctx, lo, hi)` over [0, n)
 * in chunks. One parallel region runs at a time; a call made while another is
 * running (another thread, or a nested kernel) simply runs serially, so calls
 * from several threads stay correct. Threads: JX_NUM_THREADS, else the online
 * CPUs; jx_set_num_threads() changes it (1 = serial).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef JX_VISIBLE
#define JX_API __attribute__((visibility("default")))
#else
#define JX_API __attribute__((visibility("hidden")))
#endif

typedef void (*jx_body_fn)(void *ctx, int64_t lo, int64_t hi);

#define JX_MAX_THREADS 256

static pthread_once_t jx_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t jx_region = PTHREAD_MUTEX_INITIALIZER;  /* one region at a time */
static pthread_mutex_t jx_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jx_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t jx_done = PTHREAD_COND_INITIALIZER;
static int jx_threads = 1;       /* threads used by a region, the caller included */
static int jx_started = 0;       /* worker threads running */
static uint64_t jx_generation = 0;
static int jx_busy = 0;          /* workers still inside the current region */

static jx_body_fn jx_fn;
static void *jx_ctx;
static int64_t jx_n, jx_chunk, jx_next;

static int jx_default_threads(void) {
    const char *env = getenv("JX_NUM_THREADS");
    long n = env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > JX_MAX_THREADS) n = JX_MAX_THREADS;
    return (int)n;
}

/* Take chunks until none are left. */
static void jx_work(jx_body_fn fn, void *ctx) {
    for (;;) {
        int64_t lo = __atomic_fetch_add(&jx_next, jx_chunk, __ATOMIC_RELAXED);
        if (lo >= jx_n) return;
        int64_t hi = lo + jx_chunk < jx_n ? lo + jx_chunk : jx_n;
        fn(ctx, lo, hi);
    }
}

/* Spin this many pauses (about a millisecond) before sleeping: back-to-back
 * regions, the common case in a model, then start without a futex wake-up. */
#define JX_SPIN 8192

static inline void jx_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void *jx_worker(void *arg) {
    /* the generation when it was started: a region that ran before is not its own */
    uint64_t seen = (uint64_t)(uintptr_t)arg;
    for (;;) {
        for (int i = 0; i < JX_SPIN &&
                        __atomic_load_n(&jx_generation, __ATOMIC_ACQUIRE) == seen; i++)
            jx_pause();
        pthread_mutex_lock(&jx_mu);
        while (jx_generation == seen) pthread_cond_wait(&jx_start, &jx_mu);
        seen = jx_generation;
        jx_body_fn fn = jx_fn;
        void *ctx = jx_ctx;
        pthread_mutex_unlock(&jx_mu);
        jx_work(fn, ctx);
        pthread_mutex_lock(&jx_mu);
        if (__atomic_sub_fetch(&jx_busy, 1, __ATOMIC_ACQ_REL) == 0) pthread_cond_signal(&jx_done);
        pthread_mutex_unlock(&jx_mu);
    }
    return NULL;
}

/* A forked child has only the forking thread: the parent's workers were not
 * copied, and a lock may have been copied held. Start afresh (workers come back
 * on the next region); without this a child's first region waits forever. */
static void jx_after_fork_child(void) {
    pthread_mutex_t fresh_mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    jx_region = fresh_mutex;
    jx_mu = fresh_mutex;
    jx_start = fresh_cond;
    jx_done = fresh_cond;
    jx_started = 0;
    jx_busy = 0;
}

static void jx_init(void) {
    jx_threads = jx_default_threads();
    pthread_atfork(NULL, NULL, jx_after_fork_child);
}

/* Start workers up to jx_threads - 1 (called with jx_region held). */
static void jx_ensure_workers(void) {
    while (jx_started < jx_threads - 1) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&t, &attr, jx_worker,
                                 (void *)(uintptr_t)__atomic_load_n(&jx_generation,
                                                                    __ATOMIC_ACQUIRE));
        pthread_attr_destroy(&attr);
        if (err) { jx_threads = jx_started + 1; return; }
        jx_started++;
    }
}

JX_API void jx_set_num_threads(int n) {
    pthread_once(&jx_once, jx_init);
    pthread_mutex_lock(&jx_region);
    jx_threads = n < 1 ? 1 : (n > JX_MAX_THREADS ? JX_MAX_THREADS : n);
    pthread_mutex_unlock(&jx_region);
}

JX_API int jx_get_num_threads(void) {
    pthread_once(&jx_once, jx_init);
    return jx_threads;
}

JX_API void jx_parallel_for(jx_body_fn fn, void *ctx, int64_t n) {
    pthread_once(&jx_once, jx_init);
    if (n <= 0) return;
    if (jx_threads <= 1 || n == 1 || pthread_mutex_trylock(&jx_region) != 0) {
        fn(ctx, 0, n);
        return;
    }
    jx_ensure_workers();
    int threads = jx_started + 1 < jx_threads ? jx_started + 1 : jx_threads;
    if (threads <= 1) {
        pthread_mutex_unlock(&jx_region);
        fn(ctx, 0, n);
        return;
    }
    /* a few chunks per thread balances uneven rows without much scheduling */
    int64_t chunks = (int64_t)threads * 4;
    int64_t chunk = (n + chunks - 1) / chunks;
    pthread_mutex_lock(&jx_mu);
    jx_fn = fn;
    jx_ctx = ctx;
    jx_n = n;
    jx_chunk = chunk < 1 ? 1 : chunk;
    jx_next = 0;
    jx_busy = jx_started;
    __atomic_add_fetch(&jx_generation, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&jx_start);
    pthread_mutex_unlock(&jx_mu);
    jx_work(fn, ctx);
    for (int i = 0; i < JX_SPIN && __atomic_load_n(&jx_busy, __ATOMIC_ACQUIRE) > 0; i++)
        jx_pause();
    pthread_mutex_lock(&jx_mu);
    while (jx_busy > 0) pthread_cond_wait(&jx_done, &jx_mu);
    pthread_mutex_unlock(&jx_mu);
    pthread_mutex_unlock(&jx_region);
}
