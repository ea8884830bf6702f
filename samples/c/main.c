/* Call a jx-compiled entry from C through its generated header.
 *
 * Build and run, for samples/mlp.py's `predict` (the defaults below):
 *
 *     jx compile samples/mlp.py -o build        # build/libmlp.so and build/mlp.h
 *     cc -O2 -std=c99 -Ibuild samples/c/main.c -Lbuild -lmlp \
 *        -Wl,-rpath,"$PWD/build" -o build/mlp_main
 *     ./build/mlp_main            # one call: prints each output's sums and a checksum
 *     ./build/mlp_main 1000       # also times 1000 calls
 *
 * or against the static library (no run-time dependency but libc, libm, pthreads):
 *
 *     jx compile samples/mlp.py --static -o build   # build/libmlp.a, mlp.h, mlp.pc
 *     cc -O2 -std=c99 samples/c/main.c $(PKG_CONFIG_PATH=build pkg-config --cflags \
 *        --libs mlp) -o build/mlp_main
 *
 * Nothing here is specific to the MLP: the header's per-entry macros give the
 * number, byte sizes and dtypes of the input and output leaves, so another
 * entry or model only needs different -D flags: the artifact's symbol prefix
 * (`jx compile --prefix`, default the model's name) and the entry, each also in
 * upper case for the macros (MLP_LOSS_NUM_INPUTS, ...):
 *
 *     cc ... -DJX_HEADER='"mlp.h"' -DJX_PREFIX=mlp -DJX_PREFIX_UPPER=MLP \
 *            -DJX_ENTRY=loss -DJX_ENTRY_UPPER=LOSS ...
 *
 * An entry with symbolic dimensions (samples/serve.py: a batch B of any size) takes
 * their values after the repeat count, with -DJX_SYMBOLIC; its shapes come from
 * the artifact's <prefix>_<entry>_shapes:
 *
 *     jx compile samples/serve.py -o build
 *     cc -O2 -std=c99 -Ibuild -DJX_HEADER='"serve.h"' -DJX_PREFIX=serve \
 *        -DJX_PREFIX_UPPER=SERVE -DJX_SYMBOLIC samples/c/main.c -Lbuild -lserve \
 *        -Wl,-rpath,"$PWD/build" -o build/serve_main
 *     ./build/serve_main 0 7      # B = 7: predict on 7 rows
 *
 * Every input leaf k is filled with a deterministic pattern (element i holds
 * ((7i + 13k) mod 17) - 8, divided by 16 for floats; bool: (i + k) mod 3 == 0;
 * unsigned: + 8), so the checksum can be compared with the same call made from
 * Python through jx.runtime.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef JX_HEADER
#define JX_HEADER "mlp.h"
#endif
#include JX_HEADER

#ifndef JX_PREFIX
#define JX_PREFIX mlp
#define JX_PREFIX_UPPER MLP
#endif
#ifndef JX_ENTRY
#define JX_ENTRY predict
#define JX_ENTRY_UPPER PREDICT
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)
/* The artifact's names: PREFIX_ENTRY_<suffix> macros, prefix_<name> symbols. */
#define ENTRY_MACRO(suffix) CAT(CAT(CAT(CAT(JX_PREFIX_UPPER, _), JX_ENTRY_UPPER), _), suffix)
#define SYMBOL(name) CAT(CAT(JX_PREFIX, _), name)

#define NUM_INPUTS ENTRY_MACRO(NUM_INPUTS)
#define NUM_OUTPUTS ENTRY_MACRO(NUM_OUTPUTS)

/* Byte-exact conversions for 16-bit floats (no libm, no compiler extensions). */
static uint16_t half_from_float(float f) {  /* exact for the pattern's values */
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    if ((x & 0x7fffffffu) == 0) return (uint16_t)sign;
    uint32_t exp = ((x >> 23) & 0xffu) - 127u + 15u;
    return (uint16_t)(sign | (exp << 10) | ((x & 0x7fffffu) >> 13));
}

static double float_from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0) {  /* zero or subnormal: mant * 2^-24 */
        f = (float)mant / 16777216.0f;
        return sign ? -f : f;
    }
    bits = sign | ((exp == 31 ? 255u : exp - 15u + 127u) << 23) | (mant << 13);
    memcpy(&f, &bits, 4);
    return f;
}

static size_t dtype_size(const char* d) {
    if (!strcmp(d, "float64") || !strcmp(d, "int64") || !strcmp(d, "uint64")) return 8;
    if (!strcmp(d, "float32") || !strcmp(d, "int32") || !strcmp(d, "uint32")) return 4;
    if (!strcmp(d, "float16") || !strcmp(d, "bfloat16") || !strcmp(d, "int16")
        || !strcmp(d, "uint16")) return 2;
    if (!strcmp(d, "int8") || !strcmp(d, "uint8") || !strcmp(d, "bool")) return 1;
    return 0;
}

static void fill(void* buf, size_t n, const char* d, int k) {
    for (size_t i = 0; i < n; i++) {
        int v = (int)((7 * i + 13 * (size_t)k) % 17) - 8;
        float f = (float)v / 16.0f;
        uint32_t fbits;
        memcpy(&fbits, &f, 4);
        if (!strcmp(d, "float32")) ((float*)buf)[i] = f;
        else if (!strcmp(d, "float64")) ((double*)buf)[i] = v / 16.0;
        else if (!strcmp(d, "float16")) ((uint16_t*)buf)[i] = half_from_float(f);
        else if (!strcmp(d, "bfloat16")) ((uint16_t*)buf)[i] = (uint16_t)(fbits >> 16);
        else if (!strcmp(d, "int8")) ((int8_t*)buf)[i] = (int8_t)v;
        else if (!strcmp(d, "int16")) ((int16_t*)buf)[i] = (int16_t)v;
        else if (!strcmp(d, "int32")) ((int32_t*)buf)[i] = v;
        else if (!strcmp(d, "int64")) ((int64_t*)buf)[i] = v;
        else if (!strcmp(d, "uint8")) ((uint8_t*)buf)[i] = (uint8_t)(v + 8);
        else if (!strcmp(d, "uint16")) ((uint16_t*)buf)[i] = (uint16_t)(v + 8);
        else if (!strcmp(d, "uint32")) ((uint32_t*)buf)[i] = (uint32_t)(v + 8);
        else if (!strcmp(d, "uint64")) ((uint64_t*)buf)[i] = (uint64_t)(v + 8);
        else if (!strcmp(d, "bool")) ((uint8_t*)buf)[i] = (uint8_t)((i + (size_t)k) % 3 == 0);
    }
}

static double element(const void* buf, size_t i, const char* d) {
    if (!strcmp(d, "float32")) return ((const float*)buf)[i];
    if (!strcmp(d, "float64")) return ((const double*)buf)[i];
    if (!strcmp(d, "float16")) return float_from_half(((const uint16_t*)buf)[i]);
    if (!strcmp(d, "bfloat16")) {
        uint32_t bits = (uint32_t)((const uint16_t*)buf)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    if (!strcmp(d, "int8")) return ((const int8_t*)buf)[i];
    if (!strcmp(d, "int16")) return ((const int16_t*)buf)[i];
    if (!strcmp(d, "int32")) return ((const int32_t*)buf)[i];
    if (!strcmp(d, "int64")) return (double)((const int64_t*)buf)[i];
    if (!strcmp(d, "uint16")) return ((const uint16_t*)buf)[i];
    if (!strcmp(d, "uint32")) return ((const uint32_t*)buf)[i];
    if (!strcmp(d, "uint64")) return (double)((const uint64_t*)buf)[i];
    return ((const uint8_t*)buf)[i];  /* uint8, bool */
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#ifdef JX_SYMBOLIC
#define NUM_DIMS ENTRY_MACRO(NUM_DIMS)
/* Each leaf's bytes at the symbols' values: its itemsize times its dims' product. */
static int sizes_at(const int64_t* dims, size_t* in_bytes, size_t* out_bytes) {
    const size_t in_item[NUM_INPUTS + 1] = ENTRY_MACRO(INPUT_ITEMSIZES);
    const size_t out_item[NUM_OUTPUTS + 1] = ENTRY_MACRO(OUTPUT_ITEMSIZES);
    const int in_rank[NUM_INPUTS + 1] = ENTRY_MACRO(INPUT_RANKS);
    const int out_rank[NUM_OUTPUTS + 1] = ENTRY_MACRO(OUTPUT_RANKS);
    int64_t shapes[ENTRY_MACRO(NUM_SHAPE_DIMS) + 1];
    int at = 0;
    int status = SYMBOL(CAT(JX_ENTRY, _shapes))(dims, shapes);
    if (status != JX_OK) return status;
    for (int k = 0; k < NUM_INPUTS; k++) {
        in_bytes[k] = in_item[k];
        for (int d = 0; d < in_rank[k]; d++) in_bytes[k] *= (size_t)shapes[at++];
    }
    for (int j = 0; j < NUM_OUTPUTS; j++) {
        out_bytes[j] = out_item[j];
        for (int d = 0; d < out_rank[j]; d++) out_bytes[j] *= (size_t)shapes[at++];
    }
    return JX_OK;
}
#define CALL(inputs, outputs) SYMBOL(JX_ENTRY)(dims, inputs, outputs)
#else
#define CALL(inputs, outputs) SYMBOL(JX_ENTRY)(inputs, outputs)
#endif

int main(int argc, char** argv) {
    /* +1: an entry may have no inputs or outputs, and C has no empty arrays. */
#ifdef JX_SYMBOLIC
    int64_t dims[NUM_DIMS];
    size_t in_bytes[NUM_INPUTS + 1], out_bytes[NUM_OUTPUTS + 1];
    for (int d = 0; d < NUM_DIMS; d++)       /* each symbol's value, default 8 */
        dims[d] = argc > 2 + d ? atoll(argv[2 + d]) : 8;
    if (sizes_at(dims, in_bytes, out_bytes) != JX_OK) {
        fprintf(stderr, "these dimension values break the entry's constraints\n");
        return 2;
    }
#else
    const size_t in_bytes[NUM_INPUTS + 1] = ENTRY_MACRO(INPUT_BYTES);
    const size_t out_bytes[NUM_OUTPUTS + 1] = ENTRY_MACRO(OUTPUT_BYTES);
#endif
    const char* in_dtypes[NUM_INPUTS + 1] = ENTRY_MACRO(INPUT_DTYPES);
    const char* out_dtypes[NUM_OUTPUTS + 1] = ENTRY_MACRO(OUTPUT_DTYPES);
    const char* out_paths[NUM_OUTPUTS + 1] = ENTRY_MACRO(OUTPUT_PATHS);
    const void* inputs[NUM_INPUTS + 1];
    void* outputs[NUM_OUTPUTS + 1];
    long repeats = argc > 1 ? atol(argv[1]) : 0;
    double checksum = 0.0;
    int status;

    if (SYMBOL(abi_version)() != JX_ABI_VERSION) {
        fprintf(stderr, "library ABI version %u, header %d: rebuild one of them\n",
                (unsigned)SYMBOL(abi_version)(), JX_ABI_VERSION);
        return 2;
    }
    for (int k = 0; k < NUM_INPUTS; k++) {
        /* malloc(0) may return NULL, which the entry rejects: ask for a byte at least. */
        void* buf = malloc(in_bytes[k] ? in_bytes[k] : 1);
        size_t size = dtype_size(in_dtypes[k]);
        if (!buf || !size) {
            fprintf(stderr, "input %d: %s\n", k, buf ? "unsupported dtype" : "out of memory");
            return 1;
        }
        fill(buf, in_bytes[k] / size, in_dtypes[k], k);
        inputs[k] = buf;
    }
    for (int j = 0; j < NUM_OUTPUTS; j++) {
        outputs[j] = malloc(out_bytes[j] ? out_bytes[j] : 1);
        if (!outputs[j] || !dtype_size(out_dtypes[j])) {
            fprintf(stderr, "output %d: cannot allocate or unsupported dtype\n", j);
            return 1;
        }
    }

    status = CALL(inputs, outputs);
    if (status != JX_OK) {
        fprintf(stderr, "%s returned status %d\n", STR(SYMBOL(JX_ENTRY)), status);
        return 1;
    }
    printf("entry %s: %d inputs, %d outputs\n", STR(JX_ENTRY), NUM_INPUTS, NUM_OUTPUTS);
    for (int j = 0; j < NUM_OUTPUTS; j++) {
        size_t n = out_bytes[j] / dtype_size(out_dtypes[j]);
        double sum = 0.0, weighted = 0.0;
        for (size_t i = 0; i < n; i++) {  /* position weights catch permuted outputs */
            double v = element(outputs[j], i, out_dtypes[j]);
            sum += v;
            weighted += v * (double)(i % 7 + 1);
        }
        printf("output %d %s %s[%zu elements]: sum=%.17g weighted=%.17g\n", j,
               out_paths[j][0] ? out_paths[j] : "(result)", out_dtypes[j], n, sum, weighted);
        checksum += weighted;
    }
    printf("checksum %.17g\n", checksum);

    if (repeats > 0) {
        double start = now_seconds();
        for (long r = 0; r < repeats && status == JX_OK; r++)
            status = CALL(inputs, outputs);
        printf("%ld calls: %.3f us per call\n", repeats,
               1e6 * (now_seconds() - start) / (double)repeats);
    }
    for (int k = 0; k < NUM_INPUTS; k++) free((void*)inputs[k]);
    for (int j = 0; j < NUM_OUTPUTS; j++) free(outputs[j]);
    return status == JX_OK ? 0 : 1;
}
