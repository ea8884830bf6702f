/* Drives jx's C runtime (the thread pool and the pmap collectives) from several
 * threads at once, for tests/test_lifecycle.py to build with ThreadSanitizer and
 * with AddressSanitizer + UBSan. Built as one unit with the runtime's sources:
 *   cc -pthread -DJX_VISIBLE -I codegen/cpu/cruntime tests/csrc/runtime_driver.c
 * Exits 0 when every result is right; the sanitizers report on stderr. */
#include "jx_parallel.c"
#include "jx_collectives.c"

#define ROUNDS 150
#define MAX_N 3000

static int failures;

static void fail(const char *what, long at) {
    fprintf(stderr, "runtime_driver: wrong result: %s (at %ld)\n", what, at);
    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

/* Each index of [lo, hi) is bumped once per region; the worker index must stay
 * below the pool's capacity (per-thread scratch is sized by it). */
static void bump(void *ctx, int64_t lo, int64_t hi) {
    int64_t *a = (int64_t *)ctx;
    if (jx_worker_index() < 0 || jx_worker_index() >= JX_MAX_THREADS) fail("worker index", lo);
    for (int64_t i = lo; i < hi; i++) a[i]++;
}

/* A region whose chunks start a region of their own (run serially: one region at
 * a time). */
static void nested(void *ctx, int64_t lo, int64_t hi) {
    int64_t *a = (int64_t *)ctx;
    for (int64_t i = lo; i < hi; i++) jx_parallel_for(bump, a + i * 4, 4);
}

static void *caller(void *arg) {
    int seed = (int)(intptr_t)arg;
    int64_t *a = calloc(MAX_N * 4, sizeof(int64_t));
    for (int r = 0; r < ROUNDS; r++) {
        int64_t n = 1 + (seed * 7919 + r * 104729) % MAX_N;
        memset(a, 0, MAX_N * 4 * sizeof(int64_t));
        if (r % 5 == 0) {
            jx_parallel_for(nested, a, n / 4 + 1);
            for (int64_t i = 0; i < (n / 4 + 1) * 4; i++)
                if (a[i] != 1) { fail("nested region", i); break; }
        } else {
            jx_parallel_for(bump, a, n);
            jx_parallel_for(bump, a, n);
            for (int64_t i = 0; i < n; i++)
                if (a[i] != 2) { fail("region", i); break; }
        }
    }
    free(a);
    return NULL;
}

static int stop_resizing;

static void *resizer(void *arg) {
    (void)arg;
    for (int k = 0; !__atomic_load_n(&stop_resizing, __ATOMIC_ACQUIRE); k++) {
        jx_set_num_threads(1 + k % 4);
        if (jx_get_num_threads() < 1) fail("thread count", k);
        sched_yield();
    }
    return NULL;
}

/* A per-device entry: out = allreduce-sum(in) over the team, then an allgather
 * of its first element. */
#define COUNT 1000
static int32_t device_entry(const void **ins, void **outs) {
    int32_t size = *(const int32_t *)ins[1];
    int32_t rc = jx_coll_allreduce(ins[0], outs[0], COUNT, JXC_F64, JXC_SUM, size);
    if (rc) return rc;
    return jx_coll_allgather(ins[0], outs[1], sizeof(double), size);
}

static void pmap_steps(void) {
    for (int n = 1; n <= 4; n++) {
        double in[4][COUNT], sum[4][COUNT], gathered[4][4];
        int32_t size = n;
        const void *ins[4][2];
        void *outs[4][2];
        for (int d = 0; d < n; d++) {
            for (int i = 0; i < COUNT; i++) in[d][i] = d * 1000.0 + i;
            ins[d][0] = in[d];
            ins[d][1] = &size;
            outs[d][0] = sum[d];
            outs[d][1] = gathered[d];
        }
        for (int step = 0; step < 20; step++) {
            if (jx_pmap_run(device_entry, n, &ins[0][0], 2, &outs[0][0], 2)) {
                fail(jx_coll_last_error(), n);
                return;
            }
            for (int d = 0; d < n; d++) {
                for (int i = 0; i < COUNT; i++)
                    if (sum[d][i] != 1000.0 * n * (n - 1) / 2 + (double)n * i) {
                        fail("allreduce", d * COUNT + i);
                        return;
                    }
                for (int j = 0; j < n; j++)
                    if (gathered[d][j] != j * 1000.0) { fail("allgather", j); return; }
            }
        }
    }
}

/* Cancelling from another thread while regions run: every region still ends
 * (its remaining chunks are counted, not run), and once the flag is cleared the
 * pool computes correctly again. */
static void *canceller(void *arg) {
    (void)arg;
    for (int k = 0; k < 50; k++) {
        jx_request_cancel();
        sched_yield();
    }
    return NULL;
}

static void cancel_phase(void) {
    int64_t *a = calloc(MAX_N, sizeof(int64_t));
    pthread_t t;
    pthread_create(&t, NULL, canceller, NULL);
    for (int r = 0; r < 100; r++) jx_parallel_for(bump, a, MAX_N);
    pthread_join(t, NULL);
    if (!jx_cancel_requested()) fail("cancel flag", 0);
    jx_cancel_reset();
    memset(a, 0, MAX_N * sizeof(int64_t));
    jx_parallel_for(bump, a, MAX_N);
    for (int64_t i = 0; i < MAX_N; i++)
        if (a[i] != 1) { fail("region after a cancel", i); break; }
    free(a);
}

int main(void) {
    pthread_t callers[3], resize;
    jx_set_num_threads(4);
    for (int k = 0; k < 3; k++) pthread_create(&callers[k], NULL, caller, (void *)(intptr_t)k);
    pthread_create(&resize, NULL, resizer, NULL);
    pmap_steps();                 /* device threads alongside the pool's */
    for (int k = 0; k < 3; k++) pthread_join(callers[k], NULL);
    __atomic_store_n(&stop_resizing, 1, __ATOMIC_RELEASE);
    pthread_join(resize, NULL);
    jx_set_num_threads(3);
    caller((void *)(intptr_t)7);  /* the pool after the resizing stopped */
    cancel_phase();
    printf("runtime_driver: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
