package ledger

import (
	"context"
	"errors"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// Test-only access to raw keys, so tests can tamper with a store the way a
// disk or an attacker would. Not part of the package API.

func EventKey(seq uint64) []byte      { return eventKey(seq) }
func HashKey(seq uint64) []byte       { return hashKey(seq) }
func MessageKey(stream uint64) []byte { return messageKey(stream) }
func SeenKey(id string) []byte        { return seenKey(id) }

const HeadKey, FormatKey, VerifiedKey = keyHead, keyFormat, keyVerified

// FormatVersion is the on-disk format this build writes.
const FormatVersion = formatVersion

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

// TimeIndex returns the x/ keys, in order.
func TimeIndex(s *Store) ([][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixTime), UpperBound: prefixEnd([]byte(prefixTime))})
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	return keys, errors.Join(it.Error(), it.Close())
}

// DropTimeIndex deletes every x/ key and sets meta/format to 1: a store as
// the format before the time index left it.
func DropTimeIndex(s *Store) error {
	if err := s.db.DeleteRange([]byte(prefixTime), prefixEnd([]byte(prefixTime)), pebble.Sync); err != nil {
		return err
	}
	return s.db.Set([]byte(keyFormat), be64(1), pebble.Sync)
}

// DropCredentialIndex deletes every c/ key and sets meta/format to 2: a
// store as the format before the credentials index left it.
func DropCredentialIndex(s *Store) error {
	if err := s.db.DeleteRange([]byte(prefixCredential), prefixEnd([]byte(prefixCredential)), pebble.Sync); err != nil {
		return err
	}
	return s.db.Set([]byte(keyFormat), be64(2), pebble.Sync)
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// CompactAll compacts the whole store, so a benchmark measures a settled
// store rather than one busy with its own compactions.
func CompactAll(s *Store) error {
	return s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, true)
}
