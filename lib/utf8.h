/*
 * Text from the nodes (docker, ray, nvidia-smi, vLLM's logs) is bytes, not
 * UTF-8, and it lands in fixed-size buffers that end up in JSON. jansson
 * refuses a string that is not valid UTF-8, so a buffer cut in the middle
 * of "é", or a raw \xff from a node, would make /status fail. Every copy of
 * remote text into daemon state goes through these: the result is always
 * valid UTF-8, never split inside a character, with every ill-formed byte
 * sequence (stray bytes, overlongs, surrogates, > U+10FFFF, truncated
 * sequences) and every control character other than tab and newline
 * (C0, DEL and C1: U+009B is a CSI as ESC [ is) replaced by U+FFFD.
 */
#ifndef TANDEM_UTF8_H
#define TANDEM_UTF8_H

#include <stddef.h>

/*
 * Copies the first srclen bytes of src (fewer if a NUL comes first) into
 * dst as valid UTF-8, writing at most dstlen - 1 bytes and a NUL; a
 * character that does not fit whole is left out with everything after it.
 * Returns the bytes written, not counting the NUL. dst and src must not
 * overlap. dstlen 0 writes nothing.
 */
size_t	 utf8_copyn(char *dst, size_t dstlen, const char *src, size_t srclen);
/* The same for a NUL-terminated src (NULL copies as ""). */
size_t	 utf8_copy(char *dst, size_t dstlen, const char *src);
/* snprintf, then the result made valid UTF-8 as utf8_copy does. */
size_t	 utf8_fmt(char *dst, size_t dstlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* Whether s (NUL-terminated) is already what utf8_copy would produce. */
int	 utf8_valid(const char *s);
/*
 * The first (last) line of a command's output that is not blank, copied as
 * utf8_copy does: what a failure message quotes. Returns buf.
 */
const char *utf8_first_line(const char *s, char *buf, size_t len);
const char *utf8_last_line(const char *s, char *buf, size_t len);

/*
 * s as it may reach an operator's terminal (tandemctl init prints what the
 * nodes answered): every byte that utf8_copy would replace (C0 controls
 * but tab and newline, DEL, C1, ill-formed bytes) written as \xNN, so an
 * ESC sequence from a node shows as "\x1b]52;..." and does nothing. The
 * rest, valid UTF-8, as it is. Returns a new string (NULL prints as "").
 */
char	*utf8_term(const char *s);

#endif
