/* The parallel runtime linked into every jx artifact (and loaded by jx.jit):
 * a persistent pool of worker threads that runs `fn(ctx, lo, hi)` over [0, n)
 * in chunks. One parallel region runs at a time; a call made while another is
 * running (another thread, or a nested kernel) simply runs serially, so calls
 * from several threads stay correct. Threads: JX_NUM_THREADS, else the CPUs
 * this process may use (its affinity mask and cgroup CPU quota);
 * jx_set_num_threads() changes it (1 = serial).
 */
/* for sched_getaffinity and CPU_COUNT; this file comes first in the unity build
 * (parallel.py), before any system header */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Linked into an artifact (parallel.py's object build) every symbol is hidden:
 * the artifact exports the controls a program may call under its own prefix
 * (P_set_num_threads, ..., forwarding here; codegen/cpu/module.py), so any
 * number of artifacts link into one program, and the static library's build
 * makes these symbols local to it. jx.jit's shared build (JX_VISIBLE) exports
 * them: the JIT's code and jx's Python side resolve them by name. */
#ifdef JX_VISIBLE
#define JX_API __attribute__((visibility("default")))
#define JX_PUBLIC __attribute__((visibility("protected")))
#else
#define JX_API __attribute__((visibility("hidden")))
#define JX_PUBLIC __attribute__((visibility("hidden")))
#endif

typedef void (*jx_body_fn)(void *ctx, int64_t lo, int64_t hi);

#define JX_MAX_THREADS 256

static pthread_once_t jx_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t jx_region = PTHREAD_MUTEX_INITIALIZER;  /* one region at a time */
static pthread_mutex_t jx_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jx_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t jx_done = PTHREAD_COND_INITIALIZER;
/* Threads used by a region, the caller included. Written under jx_region but
 * read without it (a region's first look, jx_get_num_threads), so every access
 * is atomic; relaxed suffices, the count guards no other data. */
static int jx_threads = 1;
static int jx_started = 0;       /* worker threads running */
static uint64_t jx_generation = 0;
/* A region ends when all its chunks are done, not when every worker has looked
 * in: a worker that is asleep, or whose core another process holds, would
 * otherwise hold up the caller after the others did its share. So a worker may
 * arrive after its region ended; it claims chunks with one compare-and-swap on
 * jx_claim, (generation << 32) | next chunk, which fails once the generation
 * moved on, and a region cannot end while one of its chunks is unclaimed. */
static uint64_t jx_claim;
static int64_t jx_completed;     /* chunks of the current region finished */
static int jx_region_threads;    /* threads of the current region, the caller included */
/* The calling thread's index in the region whose chunk it runs: 0 for the caller
 * (and for a serial call), 1.. for workers. Only workers with an index below
 * jx_region_threads take part in a region, so indices of concurrently running
 * chunks differ and stay below the region's thread count (per-thread scratch). */
static __thread int jx_index;

static jx_body_fn jx_fn;
static uint32_t jx_region_call;   /* the region's caller's jx_call_epoch */
static void *jx_ctx;
static int64_t jx_n, jx_chunk, jx_nchunks;

/* What a thread taking part in a region knows of it, read under jx_mu. */
typedef struct {
    jx_body_fn fn;
    void *ctx;
    int64_t n, chunk, nchunks;
    uint32_t gen;
    uint32_t call;     /* the caller's cancellation epoch (see jx_cancel_reset) */
} jx_region_t;

/* The CPUs this process may run on (taskset, a cpuset, docker --cpuset-cpus),
 * which can be far fewer than those online. */
static long jx_affinity_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);   /* more CPUs than a cpu_set_t holds */
}

/* The smaller of two limits, 0 meaning none. */
static long jx_min_limit(long a, long b) {
    return a <= 0 ? b : (b <= 0 || a < b ? a : b);
}

/* The CPU quota of cgroup directory `dir` in whole CPUs, rounded up (a quota of
 * 1.5 CPUs keeps 2 threads busy), or 0 for none. v2: cpu.max "QUOTA PERIOD", or
 * "max PERIOD"; v1: cpu.cfs_quota_us (-1 = none) and cpu.cfs_period_us. */
static long jx_cgroup_dir_cpus(const char *dir, int v1) {
    char path[4200], word[32] = "";
    long quota = 0, period = 0;
    FILE *f;
    snprintf(path, sizeof path, v1 ? "%s/cpu.cfs_quota_us" : "%s/cpu.max", dir);
    if ((f = fopen(path, "r"))) {
        if (fscanf(f, "%31s %ld", word, &period) < 1) word[0] = 0;
        fclose(f);
        quota = strcmp(word, "max") == 0 ? 0 : strtol(word, NULL, 10);
    }
    if (v1 && quota > 0) {
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%ld", &period) != 1) period = 0;
            fclose(f);
        }
    }
    return quota > 0 && period > 0 ? (quota + period - 1) / period : 0;
}

/* The tightest quota on the way from cgroup `base`+`rel` up to `base`: a parent's
 * limit binds its children, and inside a container /proc/self/cgroup may name a
 * host path while the container's own group is mounted at `base`. */
static long jx_cgroup_walk(const char *base, const char *rel, int v1) {
    char dir[4096];
    size_t stop = strlen(base);
    if (stop + strlen(rel) >= sizeof dir) rel = "";
    snprintf(dir, sizeof dir, "%s%s", base, strcmp(rel, "/") == 0 ? "" : rel);
    long cpus = 0;
    for (;;) {
        cpus = jx_min_limit(cpus, jx_cgroup_dir_cpus(dir, v1));
        char *slash = strrchr(dir + stop, '/');
        if (!slash) return cpus;
        *slash = 0;
    }
}

/* The CPU quota of this process's cgroup in whole CPUs, or 0 for none (a
 * container given --cpus=2 still sees every CPU in its affinity mask). */
static long jx_cgroup_cpus(void) {
    /* Test hook only: JX_CGROUP_ROOT points at a fake cgroup tree
     * (tests/test_parallel_runtime.py); the default is where Linux mounts it. */
    const char *root = getenv("JX_CGROUP_ROOT");
    if (!root || !*root) root = "/sys/fs/cgroup";
    /* lines "ID:CONTROLLERS:PATH": v2 is "0::PATH"; v1's cpu controller may share
     * a hierarchy ("4:cpu,cpuacct:PATH"). Absent lines leave the root group. */
    char line[4096], v2[2048] = "", v1[2048] = "", base[2048];
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
        if (!path) continue;
        *path++ = 0;
        char list[256];
        snprintf(list, sizeof list, ",%s,", ctl + 1);
        if (!ctl[1]) snprintf(v2, sizeof v2, "%s", path);
        else if (strstr(list, ",cpu,")) snprintf(v1, sizeof v1, "%s", path);
    }
    if (f) fclose(f);
    snprintf(base, sizeof base, "%s/cpu", root);
    return jx_min_limit(jx_cgroup_walk(root, v2, 0), jx_cgroup_walk(base, v1, 1));
}

static int jx_default_threads(void) {
    const char *env = getenv("JX_NUM_THREADS");
    long n = env ? strtol(env, NULL, 10) : jx_min_limit(jx_affinity_cpus(), jx_cgroup_cpus());
    if (n < 1) n = 1;
    if (n > JX_MAX_THREADS) n = JX_MAX_THREADS;
    return (int)n;
}

/* Cancellation. A long call from Python cannot take SIGINT until it returns (the
 * interpreter runs its handlers between bytecodes), so jx_install_interrupt_handler
 * puts a handler in front of the process's own that counts the request and passes
 * the signal on. A call notes the count as it starts (jx_cancel_reset) and is
 * cancelled once the count moves past that: a signal taken while no call ran was
 * the interpreter's business, and a call starting on another thread never undoes
 * a request made for one already running. Compiled code looks at every while/scan
 * iteration and when an entry ends; the pool runs no more chunks of a cancelled
 * caller's region (its workers take the caller's note with the region). */
static uint32_t jx_cancel_count;
static __thread uint32_t jx_call_epoch;
static struct sigaction jx_prev_sigint;

JX_API int32_t jx_cancel_requested(void) {
    return __atomic_load_n(&jx_cancel_count, __ATOMIC_RELAXED) != jx_call_epoch;
}

JX_API void jx_cancel_reset(void) {
    jx_call_epoch = __atomic_load_n(&jx_cancel_count, __ATOMIC_RELAXED);
}

JX_PUBLIC void jx_request_cancel(void) {
    __atomic_add_fetch(&jx_cancel_count, 1, __ATOMIC_RELAXED);
}

static void jx_on_sigint(int sig, siginfo_t *info, void *uctx) {
    jx_request_cancel();
    if (jx_prev_sigint.sa_flags & SA_SIGINFO) jx_prev_sigint.sa_sigaction(sig, info, uctx);
    else if (jx_prev_sigint.sa_handler != SIG_DFL && jx_prev_sigint.sa_handler != SIG_IGN)
        jx_prev_sigint.sa_handler(sig);
}

/* Chain in front of the current SIGINT handler (the interpreter's) unless it is
 * already ours, or SIGINT is ignored or left to kill the process. Installing again
 * after someone replaced the handler chains to the new one. 1 = installed. */
JX_PUBLIC int32_t jx_install_interrupt_handler(void) {
    struct sigaction cur, mine;
    if (sigaction(SIGINT, NULL, &cur)) return 0;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == jx_on_sigint) return 1;
    if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
        return 0;
    jx_prev_sigint = cur;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = jx_on_sigint;
    mine.sa_flags = SA_SIGINFO | (cur.sa_flags & (SA_ONSTACK | SA_RESTART));
    sigemptyset(&mine.sa_mask);
    if (sigaction(SIGINT, &mine, NULL)) return 0;
    return 1;
}

static void jx_signal_done(void) {
    pthread_mutex_lock(&jx_mu);
    pthread_cond_broadcast(&jx_done);
    pthread_mutex_unlock(&jx_mu);
}

/* Take chunks of region r until none are left (or r has ended). */
static void jx_work(const jx_region_t *r) {
    jx_call_epoch = r->call;            /* chunks are cancelled with their caller */
    uint64_t v = __atomic_load_n(&jx_claim, __ATOMIC_ACQUIRE);
    for (;;) {
        int64_t idx = (int64_t)(v & 0xffffffffu);
        if ((uint32_t)(v >> 32) != r->gen || idx >= r->nchunks) return;
        if (!__atomic_compare_exchange_n(&jx_claim, &v, v + 1, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            continue;                      /* v now holds the current word */
        int64_t lo = idx * r->chunk;
        int64_t hi = lo + r->chunk < r->n ? lo + r->chunk : r->n;
        if (!jx_cancel_requested()) r->fn(r->ctx, lo, hi);   /* else: counted, not run */
        if (__atomic_add_fetch(&jx_completed, 1, __ATOMIC_ACQ_REL) == r->nchunks)
            jx_signal_done();
        v = __atomic_load_n(&jx_claim, __ATOMIC_ACQUIRE);
    }
}

/* The current region, as its caller published it (call with jx_mu held). */
static jx_region_t jx_current(void) {
    jx_region_t r = {jx_fn, jx_ctx, jx_n, jx_chunk, jx_nchunks, (uint32_t)jx_generation,
                     jx_region_call};
    return r;
}

static inline void jx_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Before sleeping, a waiting thread (a worker waiting for a region, the caller
 * for the chunks the workers took) spins for up to JX_SPIN_NS: back-to-back regions (a model's
 * kernels, a few microseconds of serial code apart) then start without a futex
 * wake-up, which costs ~20-30 us (measured in a KVM guest; more from a deep
 * C-state). A gap longer than 0.1 ms makes a wake-up a small part of it, and an
 * idle worker hands its core back within 0.1 ms, which matters when cores are
 * shared. Bounded by time, not by a count of pauses: a pause takes ~10 cycles
 * on old Intel, ~65 on Zen, ~140 on Skylake-X. */
#define JX_SPIN_NS 100000
/* After JX_YIELD_NS the spin also yields, so a thread that shares our core (the
 * one we wait for, when there are more threads than cores) runs now rather than
 * after our spin: with two 2-thread processes on 2 cores a small region took
 * ~33 us, against ~115 us without yielding (~390 us with a 1 ms spin), and it
 * costs nothing measurable on an idle machine. */
#define JX_YIELD_NS 10000

static inline uint64_t jx_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One step of a spin: a pause, and every 64th step a look at the clock (~20-40
 * ns, small next to 64 pauses; the first look starts the clock, so a short wait
 * never reads it). False once the spin budget is spent. Start with *start = 0. */
static inline int jx_spin(unsigned *step, uint64_t *start) {
    jx_pause();
    if (++*step % 64) return 1;
    uint64_t now = jx_now_ns();
    if (!*start) *start = now;
    if (now - *start > JX_YIELD_NS) sched_yield();
    return now - *start < JX_SPIN_NS;
}

/* Worker k's generation when it was started: a region that ran before is not its
 * own (set before pthread_create, which orders it before the worker reads it). */
static uint64_t jx_born[JX_MAX_THREADS];

static void *jx_worker(void *arg) {
    jx_index = (int)(intptr_t)arg;
    uint64_t seen = jx_born[jx_index];
    for (;;) {
        unsigned step = 0;
        uint64_t t0 = 0;
        while (__atomic_load_n(&jx_generation, __ATOMIC_ACQUIRE) == seen && jx_spin(&step, &t0))
            ;
        pthread_mutex_lock(&jx_mu);
        while (jx_generation == seen) pthread_cond_wait(&jx_start, &jx_mu);
        seen = jx_generation;
        jx_region_t r = jx_current();
        int mine = jx_index < jx_region_threads;   /* else: a smaller region, sit it out */
        pthread_mutex_unlock(&jx_mu);
        if (mine) jx_work(&r);
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
    jx_completed = 0;
}

static void jx_init(void) {
    __atomic_store_n(&jx_threads, jx_default_threads(), __ATOMIC_RELAXED);
    pthread_atfork(NULL, NULL, jx_after_fork_child);
}

/* Start workers up to jx_threads - 1 (called with jx_region held); worker k has
 * index k for good. */
static void jx_ensure_workers(void) {
    while (jx_started < __atomic_load_n(&jx_threads, __ATOMIC_RELAXED) - 1) {
        int k = jx_started + 1;
        jx_born[k] = __atomic_load_n(&jx_generation, __ATOMIC_ACQUIRE);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&t, &attr, jx_worker, (void *)(intptr_t)k);
        pthread_attr_destroy(&attr);
        if (err) { __atomic_store_n(&jx_threads, jx_started + 1, __ATOMIC_RELAXED); return; }
        jx_started++;
    }
}

JX_PUBLIC void jx_set_num_threads(int n) {
    pthread_once(&jx_once, jx_init);
    pthread_mutex_lock(&jx_region);
    __atomic_store_n(&jx_threads, n < 1 ? 1 : (n > JX_MAX_THREADS ? JX_MAX_THREADS : n),
                     __ATOMIC_RELAXED);
    pthread_mutex_unlock(&jx_region);
}

JX_PUBLIC int jx_get_num_threads(void) {
    pthread_once(&jx_once, jx_init);
    return __atomic_load_n(&jx_threads, __ATOMIC_RELAXED);
}

JX_API int jx_worker_index(void) {
    return jx_index;
}

/* Run [0, n) on `threads` threads, the caller included (jx_region held). */
static void jx_run_region(jx_body_fn fn, void *ctx, int64_t n, int threads) {
    /* a few chunks per thread balances uneven rows without much scheduling */
    int64_t chunks = (int64_t)threads * 4;
    int64_t chunk = (n + chunks - 1) / chunks;
    pthread_mutex_lock(&jx_mu);
    jx_fn = fn;
    jx_ctx = ctx;
    jx_n = n;
    jx_chunk = chunk < 1 ? 1 : chunk;
    jx_nchunks = (n + jx_chunk - 1) / jx_chunk;
    jx_region_threads = threads;
    jx_region_call = jx_call_epoch;
    __atomic_store_n(&jx_completed, 0, __ATOMIC_RELAXED);
    uint64_t gen = jx_generation + 1;
    __atomic_store_n(&jx_claim, (gen & 0xffffffffu) << 32, __ATOMIC_RELEASE);
    __atomic_store_n(&jx_generation, gen, __ATOMIC_RELEASE);
    jx_region_t r = jx_current();
    pthread_cond_broadcast(&jx_start);
    pthread_mutex_unlock(&jx_mu);
    jx_work(&r);
    unsigned step = 0;
    uint64_t t0 = 0;
    while (__atomic_load_n(&jx_completed, __ATOMIC_ACQUIRE) < r.nchunks && jx_spin(&step, &t0))
        ;
    pthread_mutex_lock(&jx_mu);
    while (__atomic_load_n(&jx_completed, __ATOMIC_ACQUIRE) < r.nchunks)
        pthread_cond_wait(&jx_done, &jx_mu);
    pthread_mutex_unlock(&jx_mu);
}

JX_API void jx_parallel_for(jx_body_fn fn, void *ctx, int64_t n) {
    pthread_once(&jx_once, jx_init);
    if (n <= 0) return;
    /* Index 0 while this call runs, serial or not; a serial call nested in a
     * worker's chunk gives the worker its own index back afterwards. */
    int outer = jx_index;
    jx_index = 0;
    int threads = 1;
    if (__atomic_load_n(&jx_threads, __ATOMIC_RELAXED) > 1 && n > 1 &&
        pthread_mutex_trylock(&jx_region) == 0) {
        jx_ensure_workers();
        int want = __atomic_load_n(&jx_threads, __ATOMIC_RELAXED);   /* stable: jx_region held */
        threads = jx_started + 1 < want ? jx_started + 1 : want;
        if (threads > 1) jx_run_region(fn, ctx, n, threads);
        pthread_mutex_unlock(&jx_region);
    }
    if (threads <= 1) fn(ctx, 0, n);
    jx_index = outer;
}
