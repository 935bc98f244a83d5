#include <stdlib.h>
#include <string.h>

#include "csv.h"

int csv_split(const char *line, CsvRecord *rec)
{
    size_t len = strlen(line);
    if (len >= CSV_MAX_LINE) {
        return -1;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
        len--;
    }

    char *out = rec->buf;
    const char *p = line;
    const char *end = line + len;
    rec->count = 0;
    for (;;) {
        if (rec->count == CSV_MAX_FIELDS) {
            return -1;
        }
        rec->fields[rec->count++] = out;
        if (p < end && *p == '"') {
            p++;
            while (p < end) {
                if (*p == '"' && p + 1 < end && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
        }
        while (p < end && *p != ',') {
            *out++ = *p++;
        }
        *out++ = '\0';
        if (p == end) {
            return 0;
        }
        p++; /* the comma */
    }
}

int csv_number(const char *field, double *out)
{
    char *end;

    while (*field == ' ') {
        field++;
    }
    if (*field == '\0') {
        return -1;
    }
    errno = 0;
    double v = strtod(field, &end);
    while (*end == ' ') {
        end++;
    }
    if (*end != '\0' || errno == ERANGE) {
        return -1;
    }
    *out = v;
    return 0;
}
