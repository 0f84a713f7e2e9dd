package ledger

import (
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// Test-only access to raw keys, so tests can tamper with a store the way a
// disk or an attacker would. Not part of the package API.

func EventKey(seq uint64) []byte      { return eventKey(seq) }
func HashKey(seq uint64) []byte       { return hashKey(seq) }
func MessageKey(stream uint64) []byte { return messageKey(stream) }
func SeenKey(id string) []byte        { return seenKey(id) }

const HeadKey, FormatKey = keyHead, keyFormat

func RawGet(s *Store, key []byte) ([]byte, error) { return s.get(key) }

func RawSet(s *Store, key, value []byte) error { return s.db.Set(key, value, pebble.Sync) }

func RawDelete(s *Store, key []byte) error { return s.db.Delete(key, pebble.Sync) }

// MessageRaw splits a stored m/ value's raw JWS out, and Rebuild puts a new
// raw back with the same time and id.
func MessageRaw(stream uint64, v []byte) ([]byte, func(raw []byte) []byte, error) {
	m, err := decodeMessage(stream, v)
	if err != nil {
		return nil, nil, err
	}
	return m.Raw, func(raw []byte) []byte { m.Raw = raw; return m.encode() }, nil
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
