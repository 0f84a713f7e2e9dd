package policy

import (
	_ "embed"
	"fmt"
	"sync"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the text of the shipped default policy.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// defaultPolicy parses the shipped default on first use, not at package
// initialisation: every process linking this package (agentctl among
// them) would pay for it at start whether it judges anything or not.
var defaultPolicy = sync.OnceValue(func() *Policy {
	p, err := Parse(defaultYAML, "default.yaml")
	if err != nil {
		panic(fmt.Sprintf("policy: the shipped default policy does not load: %v", err))
	}
	return p
})

// Default is the shipped default policy.
func Default() *Policy { return defaultPolicy() }
