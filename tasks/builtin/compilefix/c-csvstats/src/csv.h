#ifndef CSV_H
#define CSV_H

#include <stddef.h>

#define CSV_MAX_FIELDS 32
#define CSV_MAX_LINE 1024

/* One parsed record: pointers into a private copy of the line. */
typedef struct {
    char buf[CSV_MAX_LINE];
    char *fields[CSV_MAX_FIELDS];
    size_t count;
} CsvRecord;

/* Splits line into rec. Handles double-quoted fields with "" escapes.
 * Returns 0 on success, -1 when the line is too long or has too many
 * fields. */
int csv_split(const char *line, CsvRecord *rec);

/* Parses a numeric field. Returns 0 and stores the value on success,
 * -1 when the field is empty, not a number or out of range. */
int csv_number(const char *field, double *out);

#endif
