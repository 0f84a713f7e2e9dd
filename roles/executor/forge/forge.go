// Package forge opens pull requests on a forge through its REST API: the
// GitHub-compatible `POST /repos/{owner}/{repo}/pulls` (GitHub, Gitea and
// Forgejo speak it). A forge's token is read from a file named in the
// node's configuration at each call; it never travels in a plan or an
// event, and errors never quote it.
//
// Example:
//
//	f := forge.Forge{Name: "github", API: "https://api.github.com", TokenFile: "/etc/agentic/github.token"}
//	pr, err := f.Open(ctx, forge.Request{Owner: "acme", Repo: "service", Title: "…", Head: "agentic/r1", Base: "main"})
package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"
)

// Forge is one forge of the node's configuration.
type Forge struct {
	// Name is how plans name it (git.credentials).
	Name string
	// API is the REST API's base URL (https://api.github.com, or
	// https://gitea.example.com/api/v1).
	API string
	// TokenFile holds the token (one line), read at each call.
	TokenFile string
	// Client is the HTTP client (nil: one with a 30 s timeout).
	Client *http.Client
}

// Request is a pull request to open.
type Request struct {
	Owner, Repo string
	Title, Body string
	Head, Base  string
	Draft       bool
}

// PR is what the forge answered.
type PR struct {
	Number int    `json:"number"`
	URL    string `json:"html_url"`
}

// Token reads the forge's token.
func (f Forge) Token() (string, error) {
	b, err := os.ReadFile(f.TokenFile)
	if err != nil {
		return "", fmt.Errorf("forge %s: read its token file: %w", f.Name, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("forge %s: token file %s must hold one line, the token", f.Name, f.TokenFile)
	}
	return tok, nil
}

// Open opens a pull request of r.Head into r.Base.
func (f Forge) Open(ctx context.Context, r Request) (PR, error) {
	tok, err := f.Token()
	if err != nil {
		return PR{}, err
	}
	base, err := url.Parse(f.API)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") {
		return PR{}, fmt.Errorf("forge %s: api %q is not an http(s) URL", f.Name, f.API)
	}
	base.Path = path.Join(base.Path, "repos", r.Owner, r.Repo, "pulls")
	body, _ := json.Marshal(map[string]any{"title": r.Title, "body": r.Body, "head": r.Head, "base": r.Base, "draft": r.Draft})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base.String(), bytes.NewReader(body))
	if err != nil {
		return PR{}, fmt.Errorf("forge %s: %w", f.Name, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	c := f.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, below
		}
		return PR{}, fmt.Errorf("forge %s: POST %s: %w", f.Name, base.Redacted(), err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(data))
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return PR{}, fmt.Errorf("forge %s: POST %s: %s: %s", f.Name, base.Redacted(), resp.Status, msg)
	}
	var pr PR
	if err := json.Unmarshal(data, &pr); err != nil || pr.Number <= 0 {
		return PR{}, fmt.Errorf("forge %s: POST %s: an answer without a pull request number", f.Name, base.Redacted())
	}
	return pr, nil
}

// OwnerRepo finds owner and repository in a remote's URL: the last two
// parts of its path (https://host/acme/service.git, git@host:acme/service,
// /srv/git/acme/service.git), ".git" trimmed.
func OwnerRepo(remote string) (owner, repo string, err error) {
	p := remote
	if u, perr := url.Parse(remote); perr == nil && u.Scheme != "" {
		p = u.Path
	} else if i := strings.IndexByte(remote, ':'); i > 0 && !strings.Contains(remote[:i], "/") {
		p = remote[i+1:] // scp-like
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	parts := strings.Split(p, "/")
	if len(parts) < 2 || parts[len(parts)-1] == "" || parts[len(parts)-2] == "" {
		return "", "", fmt.Errorf("forge: cannot tell owner/repo from remote %q", remote)
	}
	return parts[len(parts)-2], parts[len(parts)-1], nil
}
