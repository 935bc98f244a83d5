/* inidump: prints the settings of an INI file, section by section, and
 * the server port with its default. */
#include <stdio.h>
#include <string.h>

#include "ini.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: inidump FILE\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (in == NULL) {
        perror(argv[1]);
        return 1;
    }
    Ini ini;
    int bad = ini_parse(&ini, in);
    fclose(in);
    if (bad != 0) {
        fprintf(stderr, "%s:%d: syntax error\n", argv[1], bad);
        return 1;
    }

    const char *current = NULL;
    for (int i = 0; i < ini.count; i++) {
        const IniEntry *e = &ini.entries[i];
        if (current == NULL || strcmp(current, e->section) != 0) {
            printf("[%s]\n", e->section);
            current = e->section;
        }
        printf("  %s = %s\n", e->key, e->value);
    }
    printf("port: %ld\n", ini_get_long(&ini, "server", "port", 8080));
    printf("name: %s\n", ini_get(&ini, "server", "name", "localhost"));
    return 0;
}
