/* Scratch memory of compiled calls (an entry's workspace for intermediates, a
 * loop's carried buffers): jx_scratch_get / jx_scratch_put instead of malloc /
 * free. A block of JX_KEEP_MIN bytes or more is kept when its call ends and
 * handed to a later call asking for the same size. malloc serves such a block
 * from a fresh mmap whose every page faults on first touch: a 10-step stencil
 * on 256^3 floats spent a fifth of each call faulting in its 64 MiB carry.
 * At most JX_KEEP_SLOTS blocks and JX_KEEP_BYTES are kept (a full cache gives
 * up its oldest block); blocks are 64-byte aligned. Thread-safe; included after
 * jx_parallel.c by the unity build (its JX_API, jx_once and jx_init). */

#define JX_SCRATCH_HEAD 64                      /* the block's size, then padding */
#define JX_KEEP_MIN ((size_t)1 << 20)
#define JX_KEEP_SLOTS 8
#define JX_KEEP_BYTES ((size_t)512 << 20)

static pthread_mutex_t jx_keep_mu = PTHREAD_MUTEX_INITIALIZER;
static char *jx_kept[JX_KEEP_SLOTS];           /* block heads, oldest at jx_kept_next */
static size_t jx_kept_bytes;
static int jx_kept_next;

static void jx_scratch_after_fork(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    jx_keep_mu = fresh;
}

static pthread_once_t jx_scratch_once = PTHREAD_ONCE_INIT;

static void jx_scratch_init(void) {
    pthread_atfork(NULL, NULL, jx_scratch_after_fork);
}

/* n is unsigned, as malloc's: a size past 2^63 is refused, not read as negative */
JX_API void *jx_scratch_get(uint64_t n) {
    size_t size = n ? (size_t)n : 1;
    if (size >= JX_KEEP_MIN) {
        pthread_once(&jx_scratch_once, jx_scratch_init);
        pthread_mutex_lock(&jx_keep_mu);
        for (int i = 0; i < JX_KEEP_SLOTS; i++) {
            char *head = jx_kept[i];
            if (head && *(size_t *)head == size) {
                jx_kept[i] = NULL;
                jx_kept_bytes -= size;
                pthread_mutex_unlock(&jx_keep_mu);
                return head + JX_SCRATCH_HEAD;
            }
        }
        pthread_mutex_unlock(&jx_keep_mu);
    }
    void *head = NULL;
    if (size > SIZE_MAX - JX_SCRATCH_HEAD ||
        posix_memalign(&head, JX_SCRATCH_HEAD, size + JX_SCRATCH_HEAD) != 0)
        return NULL;
    *(size_t *)head = size;
    return (char *)head + JX_SCRATCH_HEAD;
}

JX_API void jx_scratch_put(void *p) {
    if (!p) return;
    char *head = (char *)p - JX_SCRATCH_HEAD;
    size_t size = *(size_t *)head;
    if (size >= JX_KEEP_MIN && size <= JX_KEEP_BYTES) {
        char *evicted[JX_KEEP_SLOTS];
        int n_evicted = 0;
        pthread_mutex_lock(&jx_keep_mu);
        /* room by giving up the oldest blocks, then the first free slot */
        for (int k = 0; k < JX_KEEP_SLOTS && jx_kept_bytes + size > JX_KEEP_BYTES; k++) {
            int i = (jx_kept_next + k) % JX_KEEP_SLOTS;
            if (jx_kept[i]) {
                jx_kept_bytes -= *(size_t *)jx_kept[i];
                evicted[n_evicted++] = jx_kept[i];
                jx_kept[i] = NULL;
            }
        }
        int slot = -1;
        for (int k = 0; k < JX_KEEP_SLOTS && slot < 0; k++)
            if (!jx_kept[(jx_kept_next + k) % JX_KEEP_SLOTS])
                slot = (jx_kept_next + k) % JX_KEEP_SLOTS;
        if (slot < 0) {                          /* every slot taken: the oldest goes */
            slot = jx_kept_next;
            jx_kept_bytes -= *(size_t *)jx_kept[slot];
            evicted[n_evicted++] = jx_kept[slot];
        }
        jx_kept[slot] = head;
        jx_kept_bytes += size;
        jx_kept_next = (slot + 1) % JX_KEEP_SLOTS;
        pthread_mutex_unlock(&jx_keep_mu);
        for (int k = 0; k < n_evicted; k++) free(evicted[k]);
        return;
    }
    free(head);
}

/* Every kept block back to the C library (P_release_scratch; tests). */
JX_API void jx_release_scratch(void) {
    char *kept[JX_KEEP_SLOTS];
    pthread_once(&jx_scratch_once, jx_scratch_init);
    pthread_mutex_lock(&jx_keep_mu);
    for (int i = 0; i < JX_KEEP_SLOTS; i++) {
        kept[i] = jx_kept[i];
        jx_kept[i] = NULL;
    }
    jx_kept_bytes = 0;
    pthread_mutex_unlock(&jx_keep_mu);
    for (int i = 0; i < JX_KEEP_SLOTS; i++) free(kept[i]);
}

/* The bytes kept now (tests). */
JX_API int64_t jx_scratch_kept_bytes(void) {
    pthread_mutex_lock(&jx_keep_mu);
    int64_t n = (int64_t)jx_kept_bytes;
    pthread_mutex_unlock(&jx_keep_mu);
    return n;
}
