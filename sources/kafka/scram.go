package kafka

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scramClient is a SCRAM (RFC 5802/7677) client for sarama's
// SCRAMClientGeneratorFunc, without channel binding.
type scramClient struct {
	hash func() hash.Hash

	user, pass  string
	nonce       string
	firstBare   string
	serverSig   []byte
	step        int
	done        bool
	randomBytes func([]byte) // tests pin the nonce
}

var errSCRAM = errors.New("kafka: scram")

func (c *scramClient) Begin(user, pass, _ string) error {
	c.user, c.pass, c.step, c.done = user, pass, 0, false
	b := make([]byte, 18)
	if c.randomBytes != nil {
		c.randomBytes(b)
	} else if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("%w: nonce: %v", errSCRAM, err)
	}
	c.nonce = base64.RawStdEncoding.EncodeToString(b)
	return nil
}

func (c *scramClient) Done() bool { return c.done }

func (c *scramClient) Step(challenge string) (string, error) {
	c.step++
	switch c.step {
	case 1:
		name := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(c.user)
		c.firstBare = "n=" + name + ",r=" + c.nonce
		return "n,," + c.firstBare, nil
	case 2:
		return c.final(challenge)
	case 3:
		attrs := scramAttrs(challenge)
		if e, ok := attrs["e"]; ok {
			return "", fmt.Errorf("%w: server error %q", errSCRAM, e)
		}
		v, err := base64.StdEncoding.DecodeString(attrs["v"])
		if err != nil || subtle.ConstantTimeCompare(v, c.serverSig) != 1 {
			return "", fmt.Errorf("%w: server signature does not verify", errSCRAM)
		}
		c.done = true
		return "", nil
	}
	return "", fmt.Errorf("%w: unexpected step %d", errSCRAM, c.step)
}

func (c *scramClient) final(serverFirst string) (string, error) {
	attrs := scramAttrs(serverFirst)
	nonce := attrs["r"]
	if !strings.HasPrefix(nonce, c.nonce) || len(nonce) == len(c.nonce) {
		return "", fmt.Errorf("%w: server nonce does not extend ours", errSCRAM)
	}
	salt, err := base64.StdEncoding.DecodeString(attrs["s"])
	if err != nil {
		return "", fmt.Errorf("%w: salt: %v", errSCRAM, err)
	}
	iter, err := strconv.Atoi(attrs["i"])
	if err != nil || iter < 1 {
		return "", fmt.Errorf("%w: iteration count %q", errSCRAM, attrs["i"])
	}
	salted, err := pbkdf2.Key(c.hash, c.pass, salt, iter, c.hash().Size())
	if err != nil {
		return "", fmt.Errorf("%w: %v", errSCRAM, err)
	}
	withoutProof := "c=biws,r=" + nonce
	authMsg := c.firstBare + "," + serverFirst + "," + withoutProof
	clientKey := c.hmac(salted, "Client Key")
	h := c.hash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	sig := c.hmac(storedKey, authMsg)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	c.serverSig = c.hmac(c.hmac(salted, "Server Key"), authMsg)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

func (c *scramClient) hmac(key []byte, msg string) []byte {
	m := hmac.New(c.hash, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func scramAttrs(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
