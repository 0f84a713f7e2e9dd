package trust

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// DecodeRootAdded reads a trust.root_added payload and the root key it
// adds, as a ledger's Append does: false when it does not name a valid
// key (hex, or unpadded base64url) whose Fingerprint is its KeyID. The
// ledger and the clients that rebuild a keyring from the ledger's trust
// records (node/api) share it, so both accept the same keys.
func DecodeRootAdded(data []byte) (event.RootAddedData, ed25519.PublicKey, bool) {
	var d event.RootAddedData
	if json.Unmarshal(data, &d) != nil {
		return d, nil, false
	}
	key, err := hex.DecodeString(d.Key)
	if err != nil || len(d.Key) != 2*ed25519.PublicKeySize || d.Key != strings.ToLower(d.Key) {
		key, err = base64.RawURLEncoding.DecodeString(d.Key)
	}
	if err != nil || len(key) != ed25519.PublicKeySize || Fingerprint(key) != d.KeyID {
		return d, nil, false
	}
	return d, key, true
}
