package policy

import (
	_ "embed"
	"fmt"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the text of the shipped default policy.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

var defaultPolicy = func() *Policy {
	p, err := Parse(defaultYAML, "default.yaml")
	if err != nil {
		panic(fmt.Sprintf("policy: the shipped default policy does not load: %v", err))
	}
	return p
}()

// Default is the shipped default policy.
func Default() *Policy { return defaultPolicy }
