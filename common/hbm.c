#include "hbm.h"
#include "fp16.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hbm_load_f32(hbm_meter_t *m, float *tile, const float *hbm, size_t n)
{ memcpy(tile, hbm, n * sizeof(float)); hbm_read(m, n * sizeof(float)); }

void hbm_store_f32(hbm_meter_t *m, float *hbm, const float *tile, size_t n)
{ memcpy(hbm, tile, n * sizeof(float)); hbm_write(m, n * sizeof(float)); }

void hbm_load_f16(hbm_meter_t *m, float *tile, const uint16_t *hbm, size_t n)
{ f16_to_f32_array(tile, hbm, n); hbm_read(m, n * sizeof(uint16_t)); }

void hbm_store_f16(hbm_meter_t *m, uint16_t *hbm, const float *tile, size_t n)
{ f32_to_f16_array(hbm, tile, n); hbm_write(m, n * sizeof(uint16_t)); }

void sram_init(sram_t *s, size_t limit) { s->limit = limit; s->used = 0; s->peak = 0; }

float *sram_take_f32(sram_t *s, size_t n, const char *what)
{
    size_t bytes = n * sizeof(float);
    if (s->used + bytes > s->limit) {
        fprintf(stderr, "sram: %s needs %zu bytes but only %zu of M = %zu are free\n",
                what, bytes, s->limit - s->used, s->limit);
        abort();
    }
    s->used += bytes;
    if (s->used > s->peak) s->peak = s->used;
    float *t = calloc(n ? n : 1, sizeof(float));
    if (!t) { fprintf(stderr, "sram: out of host memory for %s\n", what); abort(); }
    return t;
}

void sram_give_f32(sram_t *s, float *tile, size_t n) { s->used -= n * sizeof(float); free(tile); }
