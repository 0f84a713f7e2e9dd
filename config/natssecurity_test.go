package config

import (
	"errors"
	"strings"
	"testing"
)

// TestNATSCredentialsAndTLS: the credentials and TLS files of external
// servers are accepted with external servers, from the file, the
// environment and flags; credentials with the embedded server, a
// certificate without its key, or a CA without the embedded server's
// certificate are refused with the key named.
func TestNATSCredentialsAndTLS(t *testing.T) {
	c := Default()
	err := c.ApplyEnv([]string{
		"AGENTIC_NATS=tls://nats-a:4222", "AGENTIC_NATS_CREDS=/etc/agentic/agentd.creds",
		"AGENTIC_NATS_TLS_CA=/etc/agentic/ca.pem", "AGENTIC_NATS_TLS_CERT=/etc/agentic/agentd.pem", "AGENTIC_NATS_TLS_KEY=/etc/agentic/agentd-key.pem",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	if c.NATSCreds != "/etc/agentic/agentd.creds" || c.NATSTLSCA != "/etc/agentic/ca.pem" || c.NATSTLSCert != "/etc/agentic/agentd.pem" || c.NATSTLSKey != "/etc/agentic/agentd-key.pem" {
		t.Errorf("from the environment: %+v", c)
	}
	for _, flag := range []string{"nats-creds", "nats-tls-ca", "nats-tls-cert", "nats-tls-key"} {
		if _, ok := settingByFlag(flag); !ok {
			t.Errorf("no flag --%s", flag)
		}
	}

	embedded := Default()
	embedded.NATSCreds, embedded.NATSTLSCert, embedded.NATSTLSCA = "/x.creds", "/x.pem", "/ca.pem"
	err = embedded.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	for _, w := range []string{
		"nats_creds: applies to external servers",
		"nats_tls_cert: a certificate needs its key",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error lacks %q:\n%v", w, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 2 {
		t.Errorf("Validate reported %d problems, want 2:\n%v", n, err)
	}

	// With the embedded server the same keys are its TLS: a certificate
	// and key serve TLS, a CA requires client certificates.
	served := Default()
	served.NATSListen, served.NATSTLSCert, served.NATSTLSKey, served.NATSTLSCA = "0.0.0.0:4222", "/srv.pem", "/srv-key.pem", "/ca.pem"
	if err := served.Validate(); err != nil {
		t.Errorf("embedded server with TLS: Validate = %v", err)
	}
	caOnly := Default()
	caOnly.NATSTLSCA = "/ca.pem"
	if err := caOnly.Validate(); err == nil || !strings.Contains(err.Error(), "nats_tls_ca: with the embedded server it verifies clients' certificates, which needs TLS") {
		t.Errorf("embedded server with a CA and no certificate: Validate = %v", err)
	}
}
