#include "stats.h"

void stats_init(ColumnStats *s)
{
    s->count = 0;
    s->skipped = 0;
    s->min = 0;
    s->max = 0;
    s->sum = 0;
}

void stats_add(ColumnStats *s, double v)
{
    if (s->count == 0 || v < s->min) {
        s->min = v;
    }
    if (s->count == 0 || v > s->max) {
        s->max = v;
    }
    s->sum += v;
    s->count++;
}

void stats_skip(ColumnStats *s)
{
    s->skipped++;
}

double stats_mean(const ColumnStats *s)
{
    return s->count == 0 ? 0.0 : s->sum / (double)s->count;
}
