package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"sync"
)

// Assets are named by their content's version: the pages link
// /assets/app.js?v=<12 hex digits of its SHA-256>, and an asset asked for
// by its current version is sent as immutable, so that a browser loads it
// once per binary rather than on every page; asked for by another version
// or none, it is sent with no-cache (the browser checks again).

// assetVersions are the versions of the embedded assets, by file name.
var assetVersions = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assetFS, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p[len("assets/"):]] = hex.EncodeToString(sum[:])[:12]
		return nil
	})
	return out
})

// assetURL is the versioned URL of an embedded asset.
func assetURL(name string) string {
	return "/assets/" + name + "?v=" + assetVersions()[name]
}

// serveAssets serves the embedded assets with the cache headers their
// version allows.
func serveAssets() http.HandlerFunc {
	sub, _ := fs.Sub(assetFS, "assets")
	files := http.StripPrefix("/assets/", http.FileServerFS(sub))
	return func(w http.ResponseWriter, r *http.Request) {
		v, name := r.URL.Query().Get("v"), r.URL.Path[len("/assets/"):]
		if cur, ok := assetVersions()[name]; ok && v == cur {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	}
}
