#include <stdint.h>
#include <string.h>

#include "common/crux_copy.h"

#if defined(__x86_64__)
#include <emmintrin.h>

void crux_copy_stream(void *dst, const void *src, size_t length)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15; /* stream stores need 16-byte alignment */
    if (head > length) {
        head = length;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    length -= head;
    for (; length >= 64; length -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, length);
}

void crux_copy_fence(void)
{
    _mm_sfence();
}

#else

void crux_copy_stream(void *dst, const void *src, size_t length)
{
    memcpy(dst, src, length);
}

void crux_copy_fence(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#endif
