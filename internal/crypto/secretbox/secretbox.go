// Package secretbox encrypts secrets at rest (integration keys, model keys, project secrets)
// with AES-256-GCM.
//
// A sealed value is text: "v1:" followed by unpadded base64url of nonce‖ciphertext‖tag, with
// a random 96-bit nonce per message. The version names the key and scheme, so a later key
// rotation or scheme can be told apart from stored v1 values.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the key length: AES-256.
const KeySize = 32

// MaxPlaintext bounds one secret. Secrets are keys, tokens and small files; anything larger is
// a mistake that should not end up in a database row.
const MaxPlaintext = 1 << 20

const version = "v1:"

// ErrOpen is returned (wrapped) for every value that cannot be opened: malformed, of an
// unknown version, sealed with another key, or tampered with.
var ErrOpen = errors.New("secretbox: cannot open sealed value")

// Box seals and opens values with one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a KeySize-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: key has %d bytes, need %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	// The random-nonce mode draws the nonce itself and puts it in front of the ciphertext.
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext; sealing the same plaintext twice gives different values.
func (b *Box) Seal(plaintext []byte) (string, error) {
	if len(plaintext) > MaxPlaintext {
		return "", fmt.Errorf("secretbox: plaintext of %d bytes exceeds %d", len(plaintext), MaxPlaintext)
	}
	return version + base64.RawURLEncoding.EncodeToString(b.aead.Seal(nil, nil, plaintext, nil)), nil
}

// Open decrypts a value made by Seal with the same key.
func (b *Box) Open(sealed string) ([]byte, error) {
	body, ok := strings.CutPrefix(sealed, version)
	if !ok {
		return nil, fmt.Errorf("%w: unknown version", ErrOpen)
	}
	// Go's base64 decoder skips CR and LF even in strict mode; refuse them so that each
	// sealed value has exactly one text form.
	if strings.ContainsAny(body, "\r\n") {
		return nil, fmt.Errorf("%w: malformed", ErrOpen)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrOpen)
	}
	if len(raw) < b.aead.Overhead() {
		return nil, fmt.Errorf("%w: too short", ErrOpen)
	}
	plaintext, err := b.aead.Open(nil, nil, raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: wrong key or tampered", ErrOpen)
	}
	return plaintext, nil
}
