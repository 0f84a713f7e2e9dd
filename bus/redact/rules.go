package redact

// rule is one secret pattern. groups are the submatches that may hold the
// secret, the first that matched is replaced (none: the whole match). hints
// (lowercase, matched against the lowercased text) and exact (matched as
// they are) are substrings of which at least one must occur for the pattern
// to possibly match: a cheap pre-filter that keeps redaction of large
// outputs fast. A rule with runs instead of re finds its candidates itself
// (a byte loop where a regular expression would be slow); it has no hints. valid, when set,
// must accept the candidate value (entropy, character classes).
type rule struct {
	// name is the kind Find reports and rejection reasons quote. Names of
	// released sets never change.
	name string
	// id is the label of the redaction: [REDACTED:id].
	id     string
	re     *lazyRegexp
	runs   *runRule
	groups []int
	hints  []string
	exact  []string
	valid  func(v string) bool
	// check, when set, must accept the whole match.
	check func(m string) bool
	// judge, when set, must accept the match m (submatch indexes in s).
	judge func(s string, m []int) bool
	// glued, when set, must accept a secret that starts right after a
	// letter, digit or "_" (where a \b anchor would not match): a prefix
	// that also occurs inside words needs a random-looking body there.
	glued func(v string) bool
	// multiline marks a rule whose matches span lines (private keys): it
	// looks at the whole text, not only the lines that hold its hints.
	multiline bool
	// noProbe keeps the rule out of the stream redactor's prefix probe
	// (rules judged by entropy would take the probe for a secret).
	noProbe bool
}

// secretKeys are the key names whose values are secret in key=value and
// key: value forms; any key containing one of them counts (DB_PASSWORD,
// client_secret, X-Api-Key, GITHUB_TOKEN…).
const secretKeys = `password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key`

// set1 are the patterns of secret-pattern set 1. Released: never edit a
// name or a pattern (a later set adds rules instead).
var set1 = []rule{
	{
		name:      "private key block",
		id:        "private-key",
		re:        lazy(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`),
		exact:     []string{"PRIVATE KEY-----"},
		multiline: true,
	},
	{
		name:   "authorization header",
		id:     "authorization-header",
		re:     lazy(`(?i)(authorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic|token|bot)[ \t]+)([^\s"',;]+)`),
		groups: []int{2},
		hints:  []string{"authorization"},
	},
	{
		name:   "bearer token",
		id:     "bearer-token",
		re:     lazy(`(?i)(\bbearer[ \t]+)([A-Za-z0-9\-._~+/]{8,}=*)`),
		groups: []int{2},
		hints:  []string{"bearer"},
	},
	{
		name:   "key=value secret",
		id:     "secret-assignment",
		re:     lazy(`(?i)([A-Za-z0-9_.-]*(?:` + secretKeys + `)[A-Za-z0-9_.-]*["']?[ \t]*[:=][ \t]*)(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'&,;]+))`),
		groups: []int{2, 3, 4},
		hints:  []string{"pass", "secret", "token", "key"},
	},
	{
		name:   "secret flag",
		id:     "secret-flag",
		re:     lazy(`(?i)(--(?:` + secretKeys + `)[ \t]+)([^\s-][^\s]*)`),
		groups: []int{2},
		hints:  []string{"--pass", "--secret", "--token", "--api", "--access", "--private"},
	},
	{
		name:  "AWS access key id",
		id:    "aws-access-key-id",
		re:    lazy(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
		exact: []string{"AKIA", "ASIA"},
	},
	{
		name:  "GitHub token",
		id:    "github-token",
		re:    lazy(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`),
		exact: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
	},
	{
		name:  "OpenAI-style key",
		id:    "sk-api-key",
		re:    lazy(`\bsk-[A-Za-z0-9_-]{20,}`),
		exact: []string{"sk-"},
	},
	{
		name:  "Slack token",
		id:    "slack-token",
		re:    lazy(`\bxox[abposr]-[A-Za-z0-9-]{10,}`),
		exact: []string{"xox"},
	},
	{
		name:   "URL credentials",
		id:     "url-userinfo",
		re:     lazy(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)`),
		groups: []int{2},
		hints:  []string{"://"},
	},
}

// cmdGap is what may stand between a program and its password flag: the
// rest of the same simple command (no newline, pipe or list operator).
const cmdGap = `[^\n|;&]*?`

// flagValue is a flag's value: quoted or up to the next blank.
const flagValue = `(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"']+))`

// set2 are the patterns set 2 adds, modelled on the gitleaks rule set
// (github.com/gitleaks/gitleaks, config/gitleaks.toml) where it fits:
// provider tokens by their fixed prefixes, JWTs, private key bodies
// without their BEGIN line, the password flags of common command-line
// tools, and high-entropy values (bare AWS secret keys, assignments).
var set2 = []rule{
	{
		name:      "private key body",
		id:        "private-key",
		re:        lazy(`(?m)^[ \t]*(?:MII[A-Za-z0-9+/]{3}(?:IBAAK|IBADAN)|MIG[A-Za-z0-9+/]AgEAMBMG|MHcCAQEE|MIGkAgEBBD|MC4CAQAwBQYDK2Vw|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=]*(?:\r?\n[ \t]*[A-Za-z0-9+/=]{8,})*(?:\r?\n[ \t]*-----END [A-Z0-9 ]*PRIVATE KEY-----)?`),
		exact:     []string{"MII", "MIG", "MHcCAQEE", "MC4CAQAw", "b3BlbnNzaC1rZXktdjE"},
		multiline: true,
	},
	{
		name:      "private key end",
		id:        "private-key",
		re:        lazy(`(?m)(?:^[ \t]*[A-Za-z0-9+/=]{16,}\r?\n)+[ \t]*-----END [A-Z0-9 ]*PRIVATE KEY-----`),
		exact:     []string{"PRIVATE KEY-----"},
		multiline: true,
	},
	{
		name:  "stripe-access-token",
		id:    "stripe-access-token",
		re:    lazy(`\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}`),
		exact: []string{"_live_", "_test_", "_prod_"},
	},
	{
		name:  "gcp-api-key",
		id:    "gcp-api-key",
		re:    lazy(`\bAIza[0-9A-Za-z_-]{35}`),
		exact: []string{"AIza"},
	},
	{
		name:  "gitlab-token",
		id:    "gitlab-token",
		re:    lazy(`\bgl(?:pat|dt|ptt|rt|cbt|oas|soat|imt|ft|agent)-[0-9A-Za-z_-]{20,}`),
		exact: []string{"glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "glimt-", "glft-", "glagent-"},
	},
	{
		name:  "npm-access-token",
		id:    "npm-access-token",
		re:    lazy(`\bnpm_[A-Za-z0-9]{36}`),
		exact: []string{"npm_"},
	},
	{
		name:  "pypi-upload-token",
		id:    "pypi-upload-token",
		re:    lazy(`\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`),
		exact: []string{"pypi-AgEI"},
	},
	{
		name:  "provider-token",
		id:    "provider-token",
		re:    lazy(`\b(?:dckr_pat_[A-Za-z0-9_-]{27,}|dop_v1_[a-f0-9]{64}|hv[sb]\.[A-Za-z0-9_-]{24,}|hf_[A-Za-z]{34}|lin_api_[A-Za-z0-9]{40}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|whsec_[A-Za-z0-9+/]{24,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+|AGE-SECRET-KEY-1[0-9A-Z]{58})`),
		exact: []string{"dckr_pat_", "dop_v1_", "hvs.", "hvb.", "hf_", "lin_api_", "PMAK-", "shpat_", "shpca_", "shppa_", "shpss_", "SG.", "whsec_", "xapp-", "AGE-SECRET-KEY-1"},
	},
	{
		name:  "slack-webhook",
		id:    "slack-webhook",
		re:    lazy(`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{40,}|hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+`),
		exact: []string{"hooks.slack.com"},
	},
	{
		name:  "jwt",
		id:    "jwt",
		re:    lazy(`\bey[A-Za-z0-9_-]{10,}\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`),
		exact: []string{"eyJ"},
	},
	{
		// NAME_PWD=, MYSQL_PWD=, SMTP_PASS=, DB_PW=, passphrase=, credentials=,
		// AccountKey= (Azure connection strings), *_auth_token, signing keys.
		name:   "secret-assignment",
		id:     "secret-assignment",
		re:     lazy(`(?i)(\b[A-Za-z0-9_.-]*(?:_pwd|_pass|_pw|passphrase|credentials?|accountkey|sharedaccesskey|(?:signing|encryption|master|session|client|secret)[_-]?key|auth[_-]?(?:code|key))["']?[ \t]*[:=][ \t]*)` + flagValue),
		groups: []int{2, 3, 4},
		hints:  []string{"_pwd", "_pass", "_pw", "passphrase", "credential", "accountkey", "sharedaccesskey", "key", "auth"},
	},
	{
		// --http-password x, --db-password=x, --client-secret x, --auth-token=x.
		name:   "secret-flag",
		id:     "secret-flag",
		re:     lazy(`(?i)(\s--?[a-z0-9-]*(?:password|passwd|passphrase|secret|token|api-?key)[ \t=]+)` + flagValue),
		groups: []int{2, 3, 4},
		hints:  []string{"pass", "secret", "token", "key"},
		valid:  notFlag,
		check:  notNegated,
	},
	{
		// mysql -pPW, mysqldump -p'PW' (mysql's -p takes its value attached).
		name:   "mysql-password-flag",
		id:     "cli-password",
		re:     lazy(`(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh|mariadb|mariadb-dump|mariadb-admin)\b` + cmdGap + `\s-p)` + flagValue),
		groups: []int{2, 3, 4},
		hints:  []string{"mysql", "mariadb"},
		valid:  notFlag,
	},
	{
		// sshpass -p PW, redis-cli -a PW, ldapsearch -w PW, sqlcmd -P PW,
		// mongosh -p PW, docker/podman/helm… login -p PW.
		name:   "cli-password-flag",
		id:     "cli-password",
		re:     lazy(`(\b(?:sshpass` + cmdGap + `\s-p|redis-cli` + cmdGap + `\s-a|ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn)` + cmdGap + `\s-w|sqlcmd` + cmdGap + `\s-P|(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)` + cmdGap + `\s-p|(?:docker|podman|buildah|skopeo|nerdctl|helm|oras|crane|regctl)` + cmdGap + `\blogin\b` + cmdGap + `\s-p)[ \t]*)` + flagValue),
		groups: []int{2, 3, 4},
		hints:  []string{"sshpass", "redis-cli", "ldap", "sqlcmd", "mongo", "login"},
		valid:  notFlag,
	},
	{
		// curl -u user:pw, curl --user user:pw, --proxy-user, smbclient -U user%pw.
		name:   "cli-userinfo",
		id:     "cli-password",
		re:     lazy(`\b(?:curl` + cmdGap + `\s(?:-u|-U|--user|--proxy-user)|smbclient` + cmdGap + `\s(?:-U|--user))[ \t=]*(?:"[^\s:%"]*[:%]([^"\n]+)"|'[^\s:%']*[:%]([^'\n]+)'|[^\s:%"']*[:%]([^\s"']+))`),
		groups: []int{1, 2, 3},
		hints:  []string{"curl", "smbclient"},
	},
	{
		// openssl … -passin pass:PW, -passout pass:PW, -pass pass:PW, -k PW.
		name:   "openssl-pass",
		id:     "cli-password",
		re:     lazy(`(\s-pass(?:in|out)?\s+pass:)([^\s"']+)`),
		groups: []int{2},
		hints:  []string{"pass:"},
	},
	{
		// scheme://:password@host (redis and others: a password without a user).
		name:   "url-password",
		id:     "url-userinfo",
		re:     lazy(`([A-Za-z][A-Za-z0-9+.-]*://:)([^/\s@]+)(@)`),
		groups: []int{2},
		hints:  []string{"://:"},
	},
	{
		// "password hunter2", "the password is hunter2": prose, judged by the
		// value's shape so that "password reset required" is not a secret.
		name:   "password-phrase",
		id:     "password",
		re:     lazy(`(?i)(\b(?:password|passwd|passphrase|passcode|pwd)[ \t]+(?:(?:is|was|now|set to|changed to)[ \t]+)?["']?)([^\s"']{4,})`),
		groups: []int{2},
		hints:  []string{"pass", "pwd"},
		valid:  passwordLike,
	},
	{
		// A bare 40-character AWS secret access key, judged by its shape.
		name:    "aws-secret-access-key",
		id:      "aws-secret-access-key",
		runs:    &runRule{min: 40, max: 40},
		valid:   looksRandom,
		noProbe: true,
	},
	{
		// NAME=value or NAME: value with a random-looking value of 20 or
		// more characters, whatever the name.
		name:    "high-entropy-assignment",
		id:      "high-entropy-secret",
		runs:    &runRule{min: 20, max: 512, assign: true},
		valid:   looksRandom,
		noProbe: true,
	},
}

// set3Replaces names the rules of set 2 that set 3 leaves out: set 3 holds
// a form of each of its own (under the same name and label) that either
// finds a token glued to the text before it, or judges a name that merely
// contains a secret word by its value.
var set3Replaces = []string{
	"key=value secret", "secret flag", "AWS access key id", "GitHub token", "OpenAI-style key", "Slack token",
	"stripe-access-token", "gcp-api-key", "gitlab-token", "npm-access-token", "pypi-upload-token", "provider-token", "jwt",
}

// assignOp is the operator of an assignment, after its name: =, := (Go),
// or : (YAML, JSON, headers) followed by a blank or after a quote (not
// the ":" inside arn:aws:…:secret:name). quotedOp is the operator before
// a quoted value, which may be a bare ":" ({token:"…"}).
const (
	assignOp = `(?:["']?[ \t]*:?=|["']?[ \t]*:[ \t]|["'][ \t]*:)`
	quotedOp = `["']?[ \t]*(?::?=|:)`
)

// set3 are the patterns set 3 adds in place of those it replaces
// (set3Replaces).
//
// Provider tokens are found wherever they start: gitleaks anchors most of
// its rules with \b, which misses a token glued to letters, digits or "_"
// (`printf abc; cat token` prints "abcghp_…"). Set 3 drops the anchor; a
// prefix short or common enough to occur inside words (sk-, sk_test_, npm_,
// hf_, hvs.) must then be followed by a random-looking body (glued).
//
// A name that ends in a secret word (DB_PASSWORD, GITHUB_TOKEN,
// client_secret, X-Api-Key, privateKey) makes its value a secret, unless
// the value is code: a call or an index (load_key(path), os.environ[…]), a
// language constant or type (None, null, str), a field of an object
// (self.token) or the name itself ({"private_key": private_key}). A name
// that merely contains one (MY_TOKEN_PART, token_count, secret_name,
// private_key_path) makes its value a secret only when the value looks
// like a credential, as gitleaks' generic-api-key judges it (entropy of
// 3.5 bits per byte or more), and is neither a hex id nor a UUID.
//
// The name rules match from the secret word on (what comes before it in
// the name changes nothing): a leading [A-Za-z0-9_.-]* would make the
// regexp engine try every start inside every word.
var set3 = []rule{
	{
		// A name that ends in a secret word: a quoted value, or an
		// unquoted one that is not code.
		name:   "key=value secret",
		id:     "secret-assignment",
		re:     lazy(`(?i)(?:` + secretKeys + `)(?:` + quotedOp + `[ \t]*(?:"([^"\n]*)"|'([^'\n]*)')|` + assignOp + `[ \t]*([^\s"'&,;]+))`),
		groups: []int{1, 2, 3},
		hints:  []string{"pass", "secret", "token", "key"},
		judge:  unquotedNotCode,
	},
	{
		name:   "key=value secret",
		id:     "secret-assignment",
		re:     lazy(`(?i)((?:` + secretKeys + `)[A-Za-z0-9_.-]+` + assignOp + `[ \t]*)` + flagValue),
		groups: []int{2, 3, 4},
		hints:  []string{"pass", "secret", "token", "key"},
		valid:  credentialLike,
	},
	{
		// --password x, --token x; --private-key ~/.ssh/id_ed25519 names a
		// file, not a secret.
		name:   "secret flag",
		id:     "secret-flag",
		re:     lazy(`(?i)(--(?:` + secretKeys + `)[ \t]+)([^\s-][^\s]*)`),
		groups: []int{2},
		hints:  []string{"--pass", "--secret", "--token", "--api", "--access", "--private"},
		valid:  notPath,
	},
	{
		name:  "AWS access key id",
		id:    "aws-access-key-id",
		re:    lazy(`(?:AKIA|ASIA)[0-9A-Z]{16}`),
		exact: []string{"AKIA", "ASIA"},
	},
	{
		name:  "GitHub token",
		id:    "github-token",
		re:    lazy(`gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}`),
		exact: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
	},
	{
		name:  "OpenAI-style key",
		id:    "sk-api-key",
		re:    lazy(`sk-[A-Za-z0-9_-]{20,}`),
		exact: []string{"sk-"},
		glued: upperAndDigit,
	},
	{
		name:  "Slack token",
		id:    "slack-token",
		re:    lazy(`xox[abposr]-[A-Za-z0-9-]{10,}`),
		exact: []string{"xox"},
	},
	{
		name:  "stripe-access-token",
		id:    "stripe-access-token",
		re:    lazy(`(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}`),
		exact: []string{"_live_", "_test_", "_prod_"},
		glued: upperAndDigit,
	},
	{
		name:  "gcp-api-key",
		id:    "gcp-api-key",
		re:    lazy(`AIza[0-9A-Za-z_-]{35}`),
		exact: []string{"AIza"},
	},
	{
		name:  "gitlab-token",
		id:    "gitlab-token",
		re:    lazy(`gl(?:pat|dt|ptt|rt|cbt|oas|soat|imt|ft|agent)-[0-9A-Za-z_-]{20,}`),
		exact: []string{"glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "glimt-", "glft-", "glagent-"},
	},
	{
		name:  "npm-access-token",
		id:    "npm-access-token",
		re:    lazy(`npm_[A-Za-z0-9]{36}`),
		exact: []string{"npm_"},
		glued: upperAndDigit,
	},
	{
		name:  "pypi-upload-token",
		id:    "pypi-upload-token",
		re:    lazy(`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`),
		exact: []string{"pypi-AgEI"},
	},
	{
		name:  "provider-token",
		id:    "provider-token",
		re:    lazy(`dckr_pat_[A-Za-z0-9_-]{27,}|dop_v1_[a-f0-9]{64}|lin_api_[A-Za-z0-9]{40}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|whsec_[A-Za-z0-9+/]{24,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+|AGE-SECRET-KEY-1[0-9A-Z]{58}`),
		exact: []string{"dckr_pat_", "dop_v1_", "lin_api_", "PMAK-", "shpat_", "shpca_", "shppa_", "shpss_", "SG.", "whsec_", "xapp-", "AGE-SECRET-KEY-1"},
	},
	{
		// Short prefixes: a glued one must be followed by a mixed-case body.
		name:  "provider-token",
		id:    "provider-token",
		re:    lazy(`hv[sb]\.[A-Za-z0-9_-]{24,}|hf_[A-Za-z]{34}`),
		exact: []string{"hvs.", "hvb.", "hf_"},
		glued: hasUpper,
	},
	{
		// A JWT's header is base64 of `{"`: eyJ. Glued to text, only that
		// form is taken; after a word boundary, set 2's ey… as before.
		name:  "jwt",
		id:    "jwt",
		re:    lazy(`(?:\bey[A-Za-z0-9_-]{10,}|eyJ[A-Za-z0-9_-]{9,})\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`),
		exact: []string{"eyJ"},
	},
}
