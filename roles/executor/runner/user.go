package runner

import (
	"os"
	"os/user"
	"strconv"
	"sync"
)

// currentUser is the executor's user name, looked up once.
var currentUser = sync.OnceValue(func() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return name
	}
	return strconv.Itoa(os.Getuid())
})
