package shell

import "strings"

// specs holds the option knowledge of the programs rules commonly name.
// Programs not here are read with the generic spec.
var specs = map[string]*spec{
	"rm": {alias: map[string]string{
		"-R": "-r", "--recursive": "-r", "--force": "-f", "--dir": "-d",
		"--verbose": "-v", "--interactive": "-i",
	}},
	"rmdir": {alias: map[string]string{"--parents": "-p", "--verbose": "-v"}},
	"cp": {shortVal: "tS", longVal: []string{"--target-directory", "--suffix"}, alias: map[string]string{
		"-R": "-r", "--recursive": "-r", "--force": "-f", "--archive": "-a",
		"--target-directory": "-t", "--no-target-directory": "-T", "--interactive": "-i",
	}},
	"mv": {shortVal: "tS", longVal: []string{"--target-directory", "--suffix"}, alias: map[string]string{
		"--force": "-f", "--target-directory": "-t", "--interactive": "-i", "--no-clobber": "-n",
	}},
	"install": {shortVal: "tSgmo", longVal: []string{"--target-directory", "--suffix", "--group", "--mode", "--owner"},
		alias: map[string]string{"--target-directory": "-t", "--directory": "-d"}},
	"ln": {shortVal: "tS", longVal: []string{"--target-directory", "--suffix"}, alias: map[string]string{
		"--force": "-f", "--symbolic": "-s", "--target-directory": "-t",
	}},
	"chmod": {short: "cfvR", strict: true, longVal: []string{"--reference"}, alias: map[string]string{
		"--recursive": "-R", "--changes": "-c", "--silent": "-f", "--quiet": "-f", "--verbose": "-v",
	}},
	"chown": {short: "cfvRhHLP", strict: true, longVal: []string{"--reference", "--from"}, alias: map[string]string{
		"--recursive": "-R", "--no-dereference": "-h", "--silent": "-f", "--quiet": "-f", "--verbose": "-v",
	}},
	"chgrp": {short: "cfvRhHLP", strict: true, longVal: []string{"--reference"}, alias: map[string]string{
		"--recursive": "-R", "--no-dereference": "-h", "--silent": "-f", "--quiet": "-f", "--verbose": "-v",
	}},
	"shred":    {shortVal: "ns", longVal: []string{"--iterations", "--size", "--random-source"}, alias: map[string]string{"--remove": "-u", "--force": "-f", "--zero": "-z"}},
	"truncate": {shortVal: "sr", longVal: []string{"--size", "--reference"}, alias: map[string]string{"--size": "-s"}},
	"touch":    {shortVal: "rdt", longVal: []string{"--reference", "--date"}},
	"mkdir":    {shortVal: "m", longVal: []string{"--mode"}, alias: map[string]string{"--parents": "-p", "--mode": "-m"}},
	"tee":      {alias: map[string]string{"--append": "-a"}},
	"sed": {shortVal: "efl", longVal: []string{"--expression", "--file", "--line-length"}, alias: map[string]string{
		"--in-place": "-i", "--expression": "-e", "--file": "-f", "--regexp-extended": "-E",
	}},
	"find": {whole: true},
	"dd":   {whole: true},
	"tar": {shortVal: "fCbHIKLNTVgX", longVal: []string{"--file", "--directory", "--to-command", "--use-compress-program",
		"--checkpoint-action", "--info-script", "--new-volume-script", "--rsh-command"},
		alias: map[string]string{"--file": "-f", "--directory": "-C", "--extract": "-x", "--get": "-x", "--create": "-c",
			"--use-compress-program": "-I", "--info-script": "-F", "--new-volume-script": "-F"}},
	"curl": {shortVal: "oXdHuAeEbcDFKmrTwxyYzQ", longVal: []string{"--output", "--request", "--data", "--header", "--user",
		"--data-binary", "--data-raw", "--form", "--config", "--dump-header", "--upload-file", "--url", "--cookie", "--cookie-jar"},
		alias: map[string]string{"--output": "-o", "--remote-name": "-O", "--request": "-X", "--user": "-u",
			"--dump-header": "-D", "--cookie-jar": "-c", "--upload-file": "-T"}},
	"wget": {shortVal: "OoaPtTUeiBDAR", longVal: []string{"--output-document", "--output-file", "--directory-prefix", "--tries", "--timeout", "--input-file", "--execute"},
		alias: map[string]string{"--output-document": "-O", "--directory-prefix": "-P", "--output-file": "-o", "--execute": "-e", "--input-file": "-i"}},
	"git": {shortVal: "Cc", longVal: []string{"--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}, sub: true,
		subs: map[string]*spec{
			"push": {shortVal: "o", longVal: []string{"--repo", "--receive-pack", "--exec", "--push-option"}, alias: map[string]string{
				"-f": "--force", "-d": "--delete", "-u": "--set-upstream", "-n": "--dry-run", "-q": "--quiet", "-v": "--verbose",
			}},
			"reset":    {},
			"clean":    {shortVal: "e", longVal: []string{"--exclude"}, alias: map[string]string{"--force": "-f", "--dry-run": "-n", "--interactive": "-i"}},
			"checkout": {shortVal: "bB", alias: map[string]string{"--force": "-f"}},
			"switch":   {shortVal: "cC", alias: map[string]string{"--force": "-f", "--discard-changes": "-f"}},
			"branch":   {alias: map[string]string{"--delete": "-d", "--force": "-f", "--move": "-m"}},
			"commit":   {shortVal: "mFcCt", longVal: []string{"--message", "--file", "--author", "--date"}},
			"rebase":   {shortVal: "sX", longVal: []string{"--onto", "--exec"}, alias: map[string]string{"-x": "--exec"}},
			"stash":    {sub: true},
			"tag":      {shortVal: "muF", alias: map[string]string{"--delete": "-d", "--force": "-f"}},
		}},
	"apt-get":  aptSpec,
	"apt":      aptSpec,
	"aptitude": aptSpec,
	"dnf":      yumSpec,
	"yum":      yumSpec,
	"zypper":   {sub: true, alias: map[string]string{"--non-interactive": "-n"}},
	"apk":      {sub: true, shortVal: "X", longVal: []string{"--repository"}},
	"pip":      {sub: true},
	"pip3":     {sub: true},
	"npm":      {sub: true},
	"snap":     {sub: true},
	"brew":     {sub: true},
	"systemctl": {sub: true, shortVal: "tpsHMn", longVal: []string{"--type", "--property", "--signal", "--host", "--machine", "--lines", "--output"},
		alias: map[string]string{"--force": "-f", "--now": "--now"}},
	"docker":  {sub: true, shortVal: "cHl", longVal: []string{"--config", "--context", "--host", "--log-level"}},
	"kubectl": {sub: true, shortVal: "ns", longVal: []string{"--namespace", "--context", "--kubeconfig", "--server", "--cluster", "--user"}},
	"dpkg": {shortVal: "", longVal: []string{"--root", "--admindir", "--instdir"}, alias: map[string]string{
		"--remove": "-r", "--purge": "-P", "--install": "-i",
	}},
	"pacman":  {shortVal: "b", longVal: []string{"--dbpath", "--root", "--cachedir", "--config"}, alias: map[string]string{"--remove": "-R", "--sync": "-S"}},
	"kill":    {shortVal: "sn", longVal: []string{"--signal"}},
	"mkfs":    {shortVal: "t", longVal: []string{"--type"}},
	"crontab": {shortVal: "u", alias: map[string]string{}},
	"sort":    {shortVal: "otkSTz", longVal: []string{"--output", "--key", "--field-separator", "--buffer-size", "--temporary-directory"}, alias: map[string]string{"--output": "-o"}},
	"rsync": {shortVal: "eTfB", longVal: []string{"--rsh", "--rsync-path", "--filter", "--exclude", "--include", "--temp-dir", "--log-file"},
		alias: map[string]string{"--rsh": "-e", "--recursive": "-r", "--archive": "-a"}},
	"ssh": {shortVal: "BbcDEeFIiJLlmOopQRSWw", posix: true},
}

var aptSpec = &spec{shortVal: "oct", longVal: []string{"--option", "--config-file", "--target-release"}, sub: true, alias: map[string]string{
	"--yes": "-y", "--assume-yes": "-y", "--quiet": "-q", "--simulate": "-s", "--dry-run": "-s", "--just-print": "-s",
	"--no-act": "-s", "--fix-broken": "-f", "--download-only": "-d", "--auto-remove": "--autoremove",
	"--option": "-o", "--target-release": "-t", "--config-file": "-c", "--force-yes": "--force-yes",
}}

var yumSpec = &spec{shortVal: "cdeRx", longVal: []string{"--config", "--exclude", "--installroot", "--releasever", "--setopt"}, sub: true, alias: map[string]string{
	"--assumeyes": "-y", "--quiet": "-q", "--exclude": "-x",
}}

// specFor is a program's spec, nil for the generic reading. mkfs.ext4 and
// friends read as mkfs.
func specFor(program string) *spec {
	if s, ok := specs[program]; ok {
		return s
	}
	if strings.HasPrefix(program, "mkfs.") {
		return specs["mkfs"]
	}
	return nil
}

// shells run a script given with -c, as a file, or on standard input.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "fish": true, "csh": true, "tcsh": true, "yash": true, "rbash": true,
	"osh": true, "ysh": true, "ksh93": true, "oksh": true, "loksh": true, "pdksh": true, "posh": true, "sash": true,
}

// interpreter is what the judge knows of a language runtime's options:
// which carry inline code, which take a value (so the word after them is
// not the script), and which only print and exit.
type interpreter struct {
	inline   string   // short flags whose value (or the next word) is code
	longCode []string // long flags taking code (also single-dash words: erl -eval)
	info     []string // flags that print and exit without running code
	module   string   // short flag running a named module (python -m): what follows is its arguments
	// shortVal lists short flags whose value is the rest of the word or,
	// when nothing follows, the next word (python -W ignore, ruby -r lib).
	shortVal string
	// attached lists short flags whose value can only be the rest of the
	// word (perl -Mstrict, perl -i.bak, ruby -Fx).
	attached string
	// cont maps short flags that take an optional run of characters from
	// a set and then go on reading flags (perl -lne, -0777e, -CSDe, -de;
	// ruby -W0e) to that set; a ':' after them makes the rest a value
	// (perl -d:Trace, ruby -W:no-deprecated).
	cont map[byte]string
	// longVal lists long flags whose value is the next word unless written
	// with "=" (node --require fs).
	longVal []string
	// inlineSubs are subcommands whose operand is code (deno eval); runSubs
	// are subcommands after which options and a script follow (deno run).
	inlineSubs, runSubs []string
}

var pythonLike = interpreter{inline: "c", info: []string{"-V", "--version", "-h", "--help"}, module: "m", shortVal: "WX",
	longVal: []string{"--check-hash-based-pycs"}}
var perlLike = interpreter{inline: "eE", info: []string{"-v", "-V", "--version", "-h", "--help"}, shortVal: "I", attached: "MmxiF",
	cont: map[byte]string{'l': "01234567", '0': "0123456789abcdefxABCDEF", 'C': "IOEiSDALao0123456789", 'd': "", 'D': "0123456789"}}
var rubyLike = interpreter{inline: "e", info: []string{"-v", "--version", "-h", "--help"}, shortVal: "rICE", attached: "Fxi",
	cont:    map[byte]string{'0': "01234567", 'W': "012", 'T': "0123456789", 'K': "eEsSuUnN"},
	longVal: []string{"--encoding", "--external-encoding", "--internal-encoding"}}
var nodeLike = interpreter{inline: "ep", longCode: []string{"--eval", "--print"}, info: []string{"-v", "--version", "-h", "--help"}, shortVal: "rC",
	longVal: []string{"--require", "--import", "--loader", "--experimental-loader", "--conditions", "--input-type", "--title",
		"--env-file", "--icu-data-dir", "--openssl-config", "--redirect-warnings", "--disable-warning", "--watch-path",
		"--experimental-policy", "--inspect-port", "--stack-trace-limit", "--unhandled-rejections", "--diagnostic-dir", "--report-dir"}}
var phpLike = interpreter{inline: "rBRFE", info: []string{"-v", "--version", "-h", "--help", "-m", "-i"}, shortVal: "dcfztS",
	longVal: []string{"--define", "--php-ini", "--file", "--zend-extension", "--docroot"}}
var luaLike = interpreter{inline: "e", info: []string{"-v"}, shortVal: "l"}

var interpreters = map[string]interpreter{
	"python":     pythonLike,
	"pypy":       pythonLike,
	"jython":     pythonLike,
	"perl":       perlLike,
	"ruby":       rubyLike,
	"jruby":      rubyLike,
	"node":       nodeLike,
	"nodejs":     nodeLike,
	"ts-node":    nodeLike,
	"tsx":        nodeLike,
	"deno":       {longCode: []string{"--eval"}, info: []string{"-V", "--version", "-h", "--help"}, inlineSubs: []string{"eval"}, runSubs: []string{"run", "repl"}},
	"bun":        {inline: "ep", longCode: []string{"--eval", "--print"}, info: []string{"-v", "--version", "-h", "--help"}, shortVal: "r", longVal: []string{"--preload", "--cwd", "--env-file"}, runSubs: []string{"run"}},
	"php":        phpLike,
	"lua":        luaLike,
	"luajit":     {inline: "e", info: []string{"-v"}, shortVal: "ljbO"},
	"Rscript":    {inline: "e", info: []string{"--version"}},
	"R":          {inline: "e", info: []string{"--version"}, shortVal: "fd"},
	"julia":      {inline: "eE", longCode: []string{"--eval", "--print"}, info: []string{"-v", "--version", "-h", "--help"}, shortVal: "LpJtCOH", longVal: []string{"--load", "--project", "--threads", "--procs"}},
	"tclsh":      {},
	"wish":       {},
	"pwsh":       {inline: "cC", longCode: []string{"-Command", "-EncodedCommand", "-c", "-e", "-ec"}, info: []string{"-v", "-Version"}},
	"powershell": {inline: "cC", longCode: []string{"-Command", "-EncodedCommand", "-c", "-e", "-ec"}, info: []string{"-v", "-Version"}},
	"osascript":  {inline: "e", shortVal: "ls"},
	"jshell":     {},
	"irb":        {},
	"expect":     {inline: "c", shortVal: "fD"},
	"guile":      {inline: "c", shortVal: "lLxCe"},
	"racket":     {inline: "eE", shortVal: "ltfrkmpS"},
	"sbcl":       {longCode: []string{"--eval"}, longVal: []string{"--load", "--core", "--dynamic-space-size", "--control-stack-size"}},
	"elixir":     {inline: "e", longCode: []string{"--eval"}, shortVal: "rSpz"},
	"erl":        {longCode: []string{"-eval", "-s", "-run"}},
	"groovy":     {inline: "e"},
	"scala":      {inline: "e"},
	"jrunscript": {inline: "e"},
	"clojure":    {inline: "e", longCode: []string{"--eval"}},
	"ghc":        {inline: "e"},
	// Shells whose language is not sh: their -c code is not parsed.
	"xonsh":  {inline: "c", info: []string{"-V", "--version", "-h", "--help"}},
	"nu":     {inline: "c", longCode: []string{"--commands"}, info: []string{"-v", "--version", "-h", "--help"}},
	"elvish": {inline: "c", info: []string{"-version", "-help"}},
	"rc":     {inline: "c"},
	"es":     {inline: "c"},
}

// interpreterFor recognises python3, python3.12, pypy3 and the like.
func interpreterFor(program string) (interpreter, bool) {
	if i, ok := interpreters[program]; ok {
		return i, true
	}
	for _, base := range []string{"python", "pypy", "jython", "perl", "ruby", "php", "lua", "node", "julia"} {
		if rest, ok := strings.CutPrefix(program, base); ok && rest != "" && strings.Trim(rest, "0123456789.-") == "" {
			return interpreters[base], true
		}
	}
	return interpreter{}, false
}

// decoders turn an encoded payload back into text: piped into a shell they
// hide the script from any reader.
func isDecoder(c *Command) bool {
	switch c.Program {
	case "base64", "base32", "basenc":
		return c.hasFlag("-d", "--decode", "-D")
	case "xxd":
		return c.hasFlag("-r", "-revert")
	case "openssl":
		return c.hasFlag("-d", "-base64", "-a")
	case "uudecode", "gunzip", "zcat", "bzcat", "xzcat", "zstdcat", "rev", "tr":
		return true
	case "gzip", "bzip2", "xz", "zstd":
		return c.hasFlag("-d", "--decompress")
	}
	return false
}

// fetchers bring content from the network.
func isFetcher(p string) bool {
	switch p {
	case "curl", "wget", "fetch", "nc", "ncat", "netcat", "socat", "aria2c", "http", "https":
		return true
	}
	return false
}

// envCode names environment variables that make a program load or run
// code the command does not show.
var envCode = map[string]bool{
	"LD_PRELOAD": true, "LD_AUDIT": true, "LD_LIBRARY_PATH": true, "BASH_ENV": true, "ENV": true,
	"PROMPT_COMMAND": true, "PS4": true, "IFS": true, "SHELLOPTS": true, "BASHOPTS": true,
	"GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_EXTERNAL_DIFF": true, "GIT_PAGER": true, "GIT_EDITOR": true,
	"PAGER": true, "EDITOR": true, "VISUAL": true, "PERL5OPT": true, "PYTHONSTARTUP": true, "NODE_OPTIONS": true,
	"RUBYOPT": true, "DYLD_INSERT_LIBRARIES": true, "GIT_CONFIG_PARAMETERS": true,
}

// EnvCode reports whether setting the variable name can make a program
// run code the command does not show (LD_PRELOAD, BASH_ENV, IFS…).
func EnvCode(name string) bool {
	return envCode[name] || strings.HasPrefix(name, "GIT_CONFIG_")
}
