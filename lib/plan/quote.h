/*
 * The one function that turns values into POSIX shell words. Every string
 * that reaches a remote shell (over SSH, or a nested "bash -c") goes through
 * here; nothing else builds shell text from values.
 */
#ifndef TANDEM_QUOTE_H
#define TANDEM_QUOTE_H

#include "util.h"

/* Appends s as one shell word: bare when it is plainly safe, else '...'. */
void	 shell_quote(struct sbuf *, const char *s);
/* Appends argv as shell words separated by spaces. */
void	 shell_join(struct sbuf *, char *const *argv);
/* Returns a new string: argv joined as shell words. */
char	*shell_command(char *const *argv);
/* The same for a strv, which it frees: how the plan's commands end. */
char	*shell_command_take(struct strv *argv);

#endif
