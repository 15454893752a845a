/* hbm.h - the HBM meter and the SRAM budget of the CPU tile models.
 *
 * A CPU model stands for a GPU kernel: its "HBM" arrays are ordinary host arrays, and
 * every load from or store to them goes through these calls, which count the bytes the
 * GPU would move through device memory. Its "SRAM" tiles are local buffers taken from an
 * sram_t budget of M bytes; taking more than M aborts, so a model cannot cheat on SRAM.
 * A chapter's closed-form traffic formula is tested against these counts exactly.
 */
#ifndef COMMON_HBM_H
#define COMMON_HBM_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t bytes_read;
    uint64_t bytes_written;
} hbm_meter_t;

static inline void hbm_reset(hbm_meter_t *m) { m->bytes_read = m->bytes_written = 0; }
static inline void hbm_read(hbm_meter_t *m, uint64_t bytes)  { m->bytes_read += bytes; }
static inline void hbm_write(hbm_meter_t *m, uint64_t bytes) { m->bytes_written += bytes; }
static inline uint64_t hbm_total(const hbm_meter_t *m) { return m->bytes_read + m->bytes_written; }

/* Counted copies between an HBM array and an SRAM tile, for the common element types.
 * "f16" arrays hold fp16 bits (2 bytes each), tiles are fp32 (the CPU model computes
 * in fp32, as the kernels accumulate in fp32). */
void hbm_load_f32 (hbm_meter_t *m, float *tile, const float *hbm, size_t n);
void hbm_store_f32(hbm_meter_t *m, float *hbm, const float *tile, size_t n);
void hbm_load_f16 (hbm_meter_t *m, float *tile, const uint16_t *hbm, size_t n);
void hbm_store_f16(hbm_meter_t *m, uint16_t *hbm, const float *tile, size_t n);

/* SRAM budget of M bytes. */
typedef struct {
    size_t limit;   /* M                       */
    size_t used;    /* bytes currently taken   */
    size_t peak;    /* most ever taken at once */
} sram_t;

void   sram_init(sram_t *s, size_t limit_bytes);
/* Take a zeroed tile of n floats; aborts with a message if it would exceed M. */
float *sram_take_f32(sram_t *s, size_t n, const char *what);
void   sram_give_f32(sram_t *s, float *tile, size_t n);
#endif
