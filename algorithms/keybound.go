package algorithms

import "crypto/sha256"

// MaxKeyBytes is the longest key a keyed table (Keyed, and the Redis
// limiter's per-key buckets) keeps as it is. A longer key is kept by its
// SHA-256 digest in a form of MaxKeyBytes+1 bytes, which no key kept as it
// is can equal, so two keys share a limiter only if they are equal (or
// their digests collide). Memory per key is then bounded whatever the
// keys: 3,000 distinct 60 KB keys held 180 MB of key bytes before.
const MaxKeyBytes = 64

// KeyBuf is room for a bounded key (see BoundKey).
type KeyBuf [MaxKeyBytes + 1]byte

// BoundKey returns key when it is at most MaxKeyBytes long, else its
// bounded form written into buf: the SHA-256 digest followed by 0xff
// padding to MaxKeyBytes+1 bytes. It does not allocate.
func BoundKey(key []byte, buf *KeyBuf) []byte {
	if len(key) <= MaxKeyBytes {
		return key
	}
	sum := sha256.Sum256(key)
	n := copy(buf[:], sum[:])
	for i := n; i < len(buf); i++ {
		buf[i] = 0xff
	}
	return buf[:]
}
