/*
 * tandemctl init's printing: what the nodes answered reaches the terminal
 * as text.
 */
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "init_int.h"
#include "utf8.h"

/*
 * Everything init prints goes through here: it quotes what the nodes
 * answered (engine versions, image names, model directories, the key
 * install's stderr), and an ESC sequence a node sent (clear the screen,
 * retitle the window, OSC 52 to write the clipboard) must reach the
 * operator's terminal as text, "\x1b...", never as a control (issue 43).
 */

void
init_tell(FILE *fp, const char *fmt, ...)
{
	va_list ap;
	char *s, *t;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	t = utf8_term(s);
	fputs(t, fp);
	free(t);
	free(s);
}
