package policy

import "strings"

// The model of programs: for each program the checker knows, how its
// arguments are read. It is data, in one place: a program the table does not
// know is judged by no code of its own (docs/policy.md, The table of
// programs, says how to add one).
//
// A line is "NAMES: SPEC". NAMES are one or more program names separated by
// commas; a name with a space ("git rebase") is a subcommand, read with its
// own spec once the parent's options are read. SPEC is words:
//
//	-x           a short option without a value (a word may cluster them: -xvf)
//	-x=ROLE      a short option taking a value: the rest of its word (-oFILE,
//	             -so FILE: the last of a cluster takes the next word) or the next
//	--long=ROLE  a long option taking a value: --long=V or --long V
//	--long       a long option without a value
//	-long=ROLE   a long option spelt with one dash (gdb -ex, gcc -wrapper)
//	N=ROLE       the N-th operand (1 is the first)
//	N+=ROLE      the N-th operand and every one after it
//	last=ROLE    the last operand, when there are two or more (cp's target)
//	posix        options end at the first operand (env, nice, valgrind)
//	nodd         "--" is an operand, not the end of options
//	nocluster    a word of one dash is one option, never a cluster (gcc)
//	oldstyle     the first word may be options without a dash (tar cf FILE)
//	cfg=KEYS     the first operand is a configuration key, the second its
//	             value: a command line when the key matches KEYS (git config)
//	multicall    the first operand names the program it is (busybox rm)
//	numopt       -N is an option (nice -10)
//	appends      the command it runs gets what it reads appended (xargs)
//	query=OPTS   with one of OPTS it runs nothing (command -v)
//	assigns      operands NAME=VALUE before the command set its environment
//	partial      the line names only some of what the program does: in strict
//	             mode its operands are read as an unknown program's are, and
//	             from the first that names a program, as that program
//	filter=KIND  what it prints is KIND (follow.go) of its stdin: copy,
//	             base64-decode, base32-decode, hex-decode, reverse, translate; when=OPTS the options that
//	             make it so (base64 -d)
//	reads=PATS=ROLE  the files it runs (make its makefile, git its hooks):
//	             the text the script wrote to a file matching PATS has ROLE
//	stdin=ROLE   the text fed to its stdin (a here-document, a here-string,
//	             literal text piped in) has the role: code:LANG (ed <<< '!cmd')
//
// A ROLE is empty for data (the default of every word), or:
//
//	cmd        a shell command line, judged as sh -c would run it
//	argv       a program and its arguments: this word and all after it
//	rest       (an option's role) the words after the option are a program
//	           and its arguments (gdb --args, perf stat --)
//	words      this word and all after it, joined by spaces: a command line
//	           (ssh HOST CMD..., watch CMD...)
//	csv        a program and its arguments separated by commas (gcc -wrapper)
//	code:LANG  code for an interpreter of LANG (see codeLangs)
//	write      a file the program writes
//	dev        a device the program writes or formats
//	kv:KEYS    KEY=VALUE (or KEY VALUE): VALUE is a command line when KEY
//	           matches one of KEYS (a|b|c, * as in a glob, case ignored)
//	pfx:PFXS   a command line follows one of the prefixes PFXS (a|b)
//	split      a command line split into a program and its arguments (env -S)
//	chdir      the directory the command runs in (env -C)
//
// The option words of a spec are what the checker needs to read the
// arguments right: which options take a value, so that the value is not
// taken for an operand (mkfs.ext4 -L -n /dev/sda1: -n is the label).
var programTable = []string{
	// Wrappers: programs that run the rest of their words as a command.
	// unwrap looks through every program whose operand is argv (wrappers).
	"env: posix assigns -u= -C=chdir -S=split -i -0 -v --unset= --chdir=chdir --split-string=split --ignore-environment --null --debug 1+=argv",
	"nice: posix numopt -n= --adjustment= 1+=argv",
	"nohup: posix 1+=argv",
	"timeout: posix -k= -s= -v -f --kill-after= --signal= --foreground --preserve-status --verbose 2+=argv",
	"stdbuf: posix -i= -o= -e= --input= --output= --error= 1+=argv",
	"setsid: posix -c -f -w --ctty --fork --wait 1+=argv",
	"ionice: posix -c= -n= -p= -P= -u= -t --class= --classdata= --pid= --pgid= --uid= --ignore 1+=argv",
	"chrt: posix -T= -P= -D= -a -b -d -f -i -o -r -R -m -p -v --all-tasks --batch --deadline --fifo --idle --other --rr --reset-on-fork 2+=argv",
	"taskset: posix -a -c -p --all-tasks --cpu-list --pid 2+=argv",
	"time: posix -f= -o=write -a -p -v -q --format= --output=write --append --portability --verbose --quiet 1+=argv",
	"command: posix query=-v|-V -p -v -V 1+=argv",
	"exec: posix -a= -c -l 1+=argv",
	"builtin: posix 1+=argv",
	"xargs: posix appends -a= -d= -E= -e= -I= -i= -L= -l= -n= -P= -s= -0 -o -p -r -t -x --arg-file= --delimiter= --eof= --replace= --max-lines= --max-args= --max-procs= --max-chars= --process-slot-var= --null --open-tty --interactive --no-run-if-empty --verbose --exit 1+=argv",
	"unbuffer: posix -p 1+=argv",
	"flock: posix -w= -E= -c=cmd -s -x -u -n -o -F --timeout= --conflict-exit-code= --command=cmd --shared --exclusive --unlock --nonblock --close --no-fork --verbose 2+=argv",
	"busybox, toybox: posix multicall 1+=argv",
	"ld.so: posix --library-path= --preload= --argv0= --audit= --inhibit-rpath= --inhibit-cache --list --verify 1+=argv",
	"chronic: posix -e -v 1+=argv",
	"strace: posix -a= -e= -E= -I= -o=write -O= -p= -P= -s= -S= -u= -U= -X= -b= -c -C -d -D -f -F -i -k -n -q -r -t -T -v -V -w -x -y -Y -z -Z --output=write --trace= --signal= --attach= --user= --env= 1+=argv",
	"ltrace: posix -a= -A= -e= -E= -D= -l= -n= -o=write -p= -s= -S -u= -X= -w= -b -c -C -f -i -L -r -t -T --output=write --library= 1+=argv",
	"unshare: posix -S= -G= -R= -w= -m -u -i -n -p -U -C -T -f -r -c --setuid= --setgid= --root= --wd= --mount --uts --ipc --net --pid --user --cgroup --time --fork --map-root-user --map-current-user --kill-child --mount-proc 1+=argv",
	"firejail: posix --quiet --noprofile --private --net= --profile= 1+=argv",
	"parallel: posix -j= -N= -n= -S= -P= -I= -a= -X= -L= --jobs= --max-args= --sshlogin= --arg-file= --delimiter= --joblog=write --results= --timeout= 1+=argv",
	"doas: posix -u= -C= -n -s -L 1+=argv",
	"sudo: posix -u= -g= -p= -U= -C= -h= -D= -r= -t= -T= --user= --group= --prompt= --chdir= 1+=argv",
	"cpulimit: posix -l= -p= -e= -c= -f -z -q -k -r -i -v -b -s -m --limit= --pid= --exe= --cpu= --foreground --lazy --quiet --kill --restore --include-children --verbose 1+=argv",
	"choom: posix -n= -p= --adjust= --pid= 1+=argv",
	"aa-exec: posix -p= -n= -i -v -d -x --profile= --namespace= --immediate --verbose --debug 1+=argv",
	"sem: posix -j= --id= --jobs= --semaphoretimeout= --st= --fg --bg --wait 1+=argv",
	"valgrind: posix --tool= --log-file=write --xml-file=write --log-fd= --suppressions= 1+=argv",
	"hyperfine: -w=cmd -r= -m= -M= -p=cmd -c=cmd -s=cmd -S=cmd -n= -u= -N -i --warmup= --runs= --min-runs= --max-runs= --prepare=cmd --conclude=cmd --cleanup=cmd --setup=cmd --shell=cmd --command-name= --time-unit= --export-json=write --export-markdown=write --export-csv=write 1+=cmd",
	"npx: -p= -c=cmd --package= --call=cmd -y --yes --no 1+=argv",
	"pnpx, bunx: -p= --package= 1+=argv",
	"perf: -C= --config=",
	"perf stat, perf record, perf trace: -e= -o=write -p= -t= -r= -C= -G= -x= -I= --event= --output=write --pid= --tid= --repeat= 1+=argv",
	"setarch, linux32, linux64: posix -B -F -L -R -S -T -X -Z -3 -v --addr-no-randomize --verbose 2+=argv",
	"logsave: posix -a -v 2+=argv",
	"multitime: posix -n= -s= -i= -o= -q 1+=argv",
	"rlwrap: posix -a= -b= -f= -H= -l=write -p= -s= -S= -z= -c -i -n -r 1+=argv",
	"torify, torsocks, proxychains, proxychains4, tsocks: posix -f= -a= -P= -u= -p= -q -i 1+=argv",
	"grc: posix -c= -e -s --colour= --config= --pty 1+=argv",
	"sshpass: posix -f= -d= -p= -e -P= -v 1+=argv",
	"ssh-agent: posix -a= -E= -P= -t= -c -s -d -D -k 1+=argv",
	"dbus-launch, dbus-run-session: posix --config-file= --dbus-daemon= 1+=argv",
	"catchsegv, pexec, fakeroot, fakechroot, eatmydata, nocache, pgrphack, tini, dumb-init, xvfb-run, openvt, aoss, padsp, pasuspender, vglrun, primusrun, optirun, prime-run, gamemoderun, mangohud, caffeinate, systemd-inhibit, faketime, proot, bwrap, nsjail, minijail0, ts: posix 1+=argv",
	"softlimit: posix -a= -c= -d= -f= -l= -m= -o= -p= -r= -s= -t= 1+=argv",
	"setlock: posix -n -N -x -X 2+=argv",
	"envdir, envuidgid: posix 2+=argv",
	"distcc, ccache, icecc, sccache: posix 1+=argv",
	"genie: -c=cmd -s -i -u --command=cmd --shell --initialized --upgrade",
	"check_by_ssh: -o=kv:proxycommand|localcommand -H= -C= -l= -p= -i= -t= -w= -c= -E= -F= -S= -O= -n= -s=",
	"start-stop-daemon: -x=cmd --exec=cmd -a=cmd --startas=cmd -n= -p= -u= -c= -d= --name= --pidfile= --user= --chuid= --chdir= -S -K -b -m -o -q -v --start --stop --background --make-pidfile --oknodo --quiet",
	"run-parts: --regex= -u= --umask= --arg= --test --list --report --verbose --lsbsysinit --new-session --exit-on-error 1=",
	"watch: posix -n= -d -t -b -e -g -c -p -x=rest -q= --interval= --differences --no-title --beep --errexit --chgexit --color --precise --exec=rest 1+=words",
	"ssh: -o=kv:proxycommand|localcommand|knownhostscommand|remotecommand|permitlocalcommand -B= -b= -c= -D= -E=write -e= -F= -I= -i= -J= -L= -l= -m= -O= -p= -Q= -R= -S= -W= -w= -4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y 2+=words",
	"scp: -S=cmd -o=kv:proxycommand|localcommand|knownhostscommand -F= -i= -J= -l= -P= -c= -D= -X= -3 -4 -6 -A -B -C -O -p -q -R -r -s -T -v last=write",
	"sftp: -S=cmd -D=cmd -o=kv:proxycommand|localcommand|knownhostscommand -b= -B= -F= -i= -J= -l= -P= -R= -s= -c= -X= -4 -6 -A -a -C -f -N -p -q -r -v",
	"rsync: -e=cmd --rsh=cmd --rsync-path=cmd -f= -T= -B= --filter= --exclude= --include= --exclude-from= --include-from= --files-from= --temp-dir= --log-file=write --password-file= --port= --timeout= --chmod= --chown= --info= --debug= -a -v -z -r -l -p -t -g -o -D -n -u -c -h -q -P -H -A -X -x -S -R -W -b -L -K -k --delete last=write",
	"socat: 1+=pfx:exec:|system:|EXEC:|SYSTEM:",
	"nc, ncat, netcat: -e=cmd -c=cmd --exec=cmd --sh-exec=cmd --lua-exec= -p= -s= -w= -i= -q= -x= -X= -o=write -l -u -v -n -z -k -4 -6",
	"tcpdump: -z=cmd -Z= -i= -w=write -W= -G= -C= -s= -c= -r= -F= -E= -y= -B= -M= -T= -j= -A -D -e -l -L -n -N -p -q -S -t -u -v -x -X",
	"zip: -TT=cmd --unzip-command=cmd -b= -n= -t= -tt= -x= -i= -P= -O=write --out=write -T -r -q -v -j -m -u -f -d -y -9 -0 1=write",
	"split: --filter=cmd -a= -b= -C= -l= -n= -t= -d -e -u --verbose",
	"scrot: -e=cmd --exec=cmd -d= -q= -t= -c -b -s -u -m",
	"pidstat: -e=rest -C= -G= -p= -T= -d -h -H -I -l -r -R -s -t -U -u -v -w",
	"csvtool: -t= -u= -o=write -z",
	"csvtool call: 1=cmd",
	"msgfilter: -i= -o=write -D= -w= --input= --output-file=write 1+=argv",
	"xdotool: 1+=",
	"xdotool exec: --sync --args= --terse 1+=argv",
	"ip: -n= -b= -c= -4 -6 -s -d -j -p -o -r -a --netns= --batch= --color=",
	"ip netns: 1=",
	"ip netns exec: 2+=argv",
	"nsenter: -t= -m= -u= -i= -n= -p= -C= -U= -T= -S= -G= -r= -w= -a -F -Z 1+=argv",
	"systemd-run: -u= -p= -E= -d= --unit= --property= --setenv= --working-directory= --description= --slice= --on-calendar= --on-active= --timer-property= --uid= --gid= --nice= --user --system --scope --pty --pipe --quiet --wait --collect --same-dir --no-block --remain-after-exit 1+=argv",
	"run0: -u= -g= --user= --group= --chdir= -D= 1+=argv",

	// Shells: their -c string is a command line; shellNested reads the rest.
	"sh, bash, dash, ash, zsh, ksh, mksh, yash, fish, rbash, ksh93, pdksh, oksh, loksh, rksh, posh, csh, tcsh, hush, msh, sash, rc, es, elvish, nu, xonsh, ion: -c=cmd -o= -O= --rcfile= --init-file=",

	// Interpreters: their inline code, read by the language's readers.
	"python, python2, python3, pypy, pypy3: -c=code:python -m= -W= -X= -Q= -b -B -d -E -h -i -I -O -q -s -S -u -v -V -x",
	"perl: -e=code:perl -E=code:perl -I= -M= -m= -x= -l= -0= -C= -d= -D= -a -c -f -n -p -s -S -t -T -u -U -v -V -w -W -X",
	"ruby, irb, jruby: -e=code:ruby -I= -r= -E= -C= -x= -F= -0= -a -c -d -l -n -p -s -S -v -w -W",
	"node, nodejs: -e=code:js -p=code:js --eval=code:js --print=code:js -r= --require= --import= --input-type= --loader= --experimental-loader= -i --interactive -c --check",
	"deno: -A --allow-all",
	"deno eval: 1=code:js",
	"bun: -e=code:js --eval=code:js -p=code:js --print=code:js",
	"bun x: 1+=argv",
	"bun run: 1+=argv",
	"php, php-cli: -r=code:php -B=code:php -R=code:php -E=code:php -f= -c= -d= -z= -a -n -l -s -i -v -q",
	"lua, luajit, lua5.1, lua5.2, lua5.3, lua5.4: -e=code:lua -l= -i -v -E -W",
	"Rscript: -e=code:r --default-packages=",
	"R: -e=code:r -f= --file= --no-save --vanilla --slave --quiet -q -s",
	"julia: -e=code:julia -E=code:julia --eval=code:julia --print=code:julia -p= -t= -L= --project= -i -q",
	"osascript: -e=code:applescript -l= -s=",
	"tclsh, wish, jimsh:  stdin=code:tcl",
	"expect: -c=code:tcl -f= -b= -d -D= -i -n -N -v stdin=code:tcl",
	"jrunscript: nocluster -e=code:js -f= -l= -cp= -classpath= -J=",
	"jjs: -e=code:js",
	"octave, octave-cli: --eval=code:octave -p= --path= -q -W --no-gui --quiet",
	"ghc: -e=code:haskell -o=write",
	"ghci, runghc, runhaskell: -e=code:haskell",
	"clisp: -x=code:lisp -i= -E= -q",
	"sbcl: --eval=code:lisp --load= --script --non-interactive --quit",
	"guile: -c=code:lisp -e= -l= -s= -L= -q",
	"racket: -e=code:lisp -l= -t= -r= -f=",
	"emacs: nocluster --eval=code:lisp -eval=code:lisp -l= --load= -f= --funcall= -Q -nw --batch -batch -q --no-init-file",
	"slsh: -e=code:slang",
	"gawk, awk, mawk, nawk, busybox-awk: -f= -v= -F= -i= -l= -E= -o= -W= --file= --assign= --field-separator= --include= --load=",
	"sed, gsed: inplace -e= -f= -l= -E -r -n -s -u -z --expression= --file= --line-length= --in-place --regexp-extended --quiet --silent --debug --sandbox --null-data --separate -i --in-place",
	"dc: -e=code:dc --expression=code:dc -f= --file= stdin=code:dc",
	"bc: -l -q -s -w -i",
	"gdb, cgdb: nocluster -ex=code:gdb -iex=code:gdb --eval-command=code:gdb --init-eval-command=code:gdb -x= -ix= --command= -p= --pid= -cd= -d= -s= -e= -se= -core= -c= --args=rest -batch --batch -nx --nx -q --quiet -n -tui stdin=code:gdb",
	"lldb: -o=code:lldb -O=code:lldb --one-line=code:lldb --one-line-before-file=code:lldb -k=code:lldb -s= -S= -p= -n= -b --batch",
	"sqlite3, sqlite: nocluster -cmd=code:sqlite -init= -separator= -newline= -nullvalue= -header -csv -json -line -list -batch -bail -echo -readonly 2+=code:sqlite stdin=code:sqlite",
	"mysql, mariadb: -e=code:mysql --execute=code:mysql -u= -p= -h= -P= -D= -S= --user= --password= --host= --port= --database= --socket= --defaults-file= -B -N -s -v -t -r stdin=code:mysql",
	"psql: -c=code:psql --command=code:psql -f= --file= -U= -h= -p= -d= -o=write -v= -P= --username= --host= --port= --dbname= --output=write --set= --variable= -A -t -q -X -w -W -1 stdin=code:psql",
	"ex, vi, vim, nvim, view, rvim, rview, vimdiff, gvim, evim, vimx: nocluster -c=code:vim --cmd=code:vim -S= -u= -U= -i= -T= -w= -W=write -s= -r= -t= -q= -e -E -s -R -M -m -n -N -b -l -C -d -y -Z -x -h -V --noplugin --clean --not-a-term --headless stdin=code:vim",
	"ed, red: -p= -s -G -l -r -v stdin=code:bang",
	"lftp: -c=code:bang -e=code:bang -f= -u= -p= stdin=code:bang",
	"ftp, tftp, smbclient: -c=code:bang -e= -p= -U= -W= -I= -m= -n -v -i stdin=code:bang",
	"mail, mailx: --exec=code:bang -E=code:bang -s= -a= -c= -b= -r= -S= -f= -u= -q= -n -N -d -v",
	"make, gmake: reads=Makefile|makefile|GNUmakefile=code:make -f= -C= -I= -j= -l= -o= -W= -O= --file= --makefile= --directory= --include-dir= --jobs= --load-average= --old-file= --what-if= --new-file= --assume-new= --eval=code:make -E=code:make --output-sync= -s -k -n -B -i -e -q -r -R -t -p -w -d --silent --keep-going --dry-run --always-make --ignore-errors 1+=kv:cc|cxx|cpp|ld|fc|shell|cc_for_build|hostcc",
	"tex, latex, pdflatex, xelatex, lualatex, luatex, pdftex, xetex, etex, context, amstex: nocluster -output-directory= -jobname= -interaction= -shell-escape --shell-escape -enable-write18 1+=code:tex",
	"latexmk: nocluster -e=code:perl -r= -jobname= -outdir= -pdflatex=cmd -latex=cmd -xelatex=cmd -lualatex=cmd -pdf -xelatex -lualatex -C -c -f -g -pvc",
	"rpm, rpmquery, rpmbuild, rpmspec: --eval=code:rpm -E=code:rpm --define= -D= --macros= --dbpath= --root= -q -a -i -l -v -V -h -e -U -F",
	"puppet: ",
	"puppet apply: -e=code:puppet --execute=code:puppet --modulepath= -l= --logdest=",
	"knife: ",
	"knife exec: -E=code:ruby --exec=code:ruby",
	"gimp, gimp-console: -b=code:python --batch=code:python --batch-interpreter= -i -d -f",
	"nmap: --script= --script-args= -o= -oN=write -oX=write -oG=write -oA=write -p= -iL= -e= -S= -D=",
	"tshark: -X= -i= -f= -Y= -r= -w=write -c= -a= -b= -o= -T= -e= -E= -d=",
	"openvpn: --up=cmd --down=cmd --route-up=cmd --route-pre-down=cmd --ipchange=cmd --client-connect=cmd --client-disconnect=cmd --learn-address=cmd --auth-user-pass-verify=cmd --tls-verify=cmd --iproute=cmd --config= --dev= --script-security= --log=write --writepid=write",
	"dhclient: nocluster -sf=cmd -cf= -lf=write -pf=write -e= -s= -g= -p= -4 -6 -d -v -q -r -x -w -n",
	"certbot: --pre-hook=cmd --post-hook=cmd --deploy-hook=cmd --renew-hook=cmd --manual-auth-hook=cmd --manual-cleanup-hook=cmd -d= -m= -a= -i= -w= --domains= --email= --authenticator= --installer= --webroot-path= --logs-dir= --work-dir= --config-dir= --cert-name= --server= -n -q -v --dry-run --agree-tos --standalone --non-interactive",
	"fzf: --bind=code:fzf --preview=cmd --with-shell=cmd --listen= -q= -d= -n= --query= --delimiter= --nth= --height= --layout= --prompt= --header= --preview-window= -e -i -m -0 -1 --ansi --multi --exact --reverse --sync",
	"sk: --bind=code:fzf --preview=cmd -c=cmd --cmd=cmd -q= --query=",
	"git: reads=.git/hooks/*|*/pre-commit|*/prepare-commit-msg|*/commit-msg|*/post-commit|*/pre-push|*/post-checkout|*/post-merge|*/pre-rebase|*/pre-receive|*/post-receive|*/reference-transaction=cmd -c=kv:core.fsmonitor|core.sshcommand|core.pager|core.editor|core.askpass|core.gitproxy|pager.*|alias.*|diff.external|diff.*.textconv|diff.*.command|filter.*.clean|filter.*.smudge|filter.*.process|merge.*.driver|sequence.editor|credential.helper|credential.*.helper|gpg.program|gpg.*.program|uploadpack.packobjectshook|remote.*.uploadpack|remote.*.receivepack|web.browser|browser.*.cmd|difftool.*.cmd|mergetool.*.cmd|man.*.cmd|sendemail.sendmailcmd|sendemail.tocmd|sendemail.cccmd|sendemail.headercmd|interactive.difffilter|core.hookspath|init.templatedir -C= --git-dir= --work-tree= --namespace= --exec-path= --config-env= -p -P --paginate --no-pager --bare --no-replace-objects --literal-pathspecs",
	"git config: cfg=core.fsmonitor|core.sshcommand|core.pager|core.editor|core.askpass|core.gitproxy|pager.*|alias.*|diff.external|diff.*.textconv|diff.*.command|filter.*.clean|filter.*.smudge|filter.*.process|merge.*.driver|sequence.editor|credential.helper|credential.*.helper|gpg.program|gpg.*.program|uploadpack.packobjectshook|remote.*.uploadpack|remote.*.receivepack|web.browser|browser.*.cmd|difftool.*.cmd|mergetool.*.cmd|man.*.cmd|sendemail.sendmailcmd|sendemail.tocmd|sendemail.cccmd|core.hookspath -f= --file= --blob= --type= --default= --global --system --local --worktree --add --get --get-all --unset --unset-all --list -l --bool --int --path --null -z --name-only --show-origin --show-scope --replace-all",
	"git rebase: -x=cmd --exec=cmd -s= -X= -C= --onto= --strategy= --strategy-option= --empty= -i -r -q -v -n -f -m --interactive --autosquash --continue --abort --skip",
	"git bisect: ",
	"git bisect run: 1+=argv",
	"git submodule: --quiet --recursive -q",
	"git submodule foreach: --recursive -q --quiet 1+=words",
	"git filter-branch: --tree-filter=cmd --index-filter=cmd --msg-filter=cmd --env-filter=cmd --commit-filter=cmd --parent-filter=cmd --tag-name-filter=cmd --setup=cmd --subdirectory-filter= -d= --original= --prune-empty -f --force",
	"git difftool, git mergetool: -x=cmd --extcmd=cmd -t= --tool= -y -g --no-prompt --gui --dir-diff -d",
	"git clone: -u=cmd --upload-pack=cmd -c=kv:core.fsmonitor|core.sshcommand|core.pager|core.editor|core.hookspath|alias.*|filter.*.clean|filter.*.smudge|filter.*.process|credential.helper --config=kv:core.fsmonitor|core.sshcommand|core.hookspath|filter.*.smudge|filter.*.process -b= -o= --branch= --origin= --depth= --reference= --separate-git-dir= --template= --filter= -j= -l -s -q -n --bare --mirror --recursive --recurse-submodules --single-branch --no-checkout",
	"git fetch, git pull, git ls-remote, git archive: --upload-pack=cmd --exec=cmd -j= --depth= --deepen= -q -v --all --tags --prune -p",
	"git push, git send-pack: --receive-pack=cmd --exec=cmd -o= --push-option= --repo= -q -v -f -u -n --all --tags --force --dry-run --set-upstream --delete -d",
	"git send-email: --sendmail-cmd=cmd --to-cmd=cmd --cc-cmd=cmd --header-cmd=cmd --smtp-server=cmd --to= --cc= --from= --subject=",
	"git commit: -m= -F= -C= -c= -t= --message= --file= --author= --date= --template= --fixup= --squash= --cleanup= -a -q -v -s -n -e --amend --no-edit --no-verify --allow-empty --signoff",
	"git log, git show, git diff, git grep, git blame, git status, git add, git rm, git mv, git checkout, git switch, git restore, git reset, git tag, git branch, git stash, git remote, git init, git merge, git cherry-pick, git revert, git am, git apply, git format-patch, git shortlog, git describe, git rev-parse, git ls-files, git worktree, git reflog, git gc, git fsck, git clean, git notes, git cat-file, git rev-list, git for-each-ref, git symbolic-ref, git update-ref, git show-ref, git count-objects, git hash-object, git var, git version, git help: -m= -n= -C= -S= -G= -e= -f= -b= -B= -u= -s= -c= -t= -o= -x= --format= --pretty= --author= --since= --until= --grep= --message= -q -v -a -d -D -i -l -p -r -w -z -L -M -N -E -F -P",
	"tar, gtar, bsdtar: oldstyle -f=write --file=write -C=dir --directory=dir -I=cmd --use-compress-program=cmd --to-command=cmd --info-script=cmd --new-volume-script=cmd -F=cmd --rmt-command=cmd --rsh-command=cmd --checkpoint-action=pfx:exec=|sleep= -T= -X= -b= -g= -H= -K= -L= -N= -V= --files-from= --exclude-from= --exclude= --blocking-factor= --listed-incremental= --format= --owner= --group= --mode= --mtime= --transform= --xform= --strip-components= --checkpoint= -c -x -t -r -u -d -A -v -z -j -J -Z -a -k -m -O -p -P -S -W -h -l -o -B -G -i -M -R -U -w --create --extract --list --append --update --verbose --gzip --bzip2 --xz --zstd --lzma",
	"apt-get, apt, apt-cache, aptitude: -o=kv:*invoke*|*install-pkgs* -c= -t= -q -y -s -d -f -m -u -b -V --yes --assume-yes --no-install-recommends --allow-unauthenticated --dry-run --simulate --download-only --fix-broken --fix-missing --quiet --purge --reinstall",
	"dpkg: --pre-invoke=cmd --post-invoke=cmd --instdir= --admindir= --root= --force-all --force-depends -i -r -P -l -L -s -S -c -x -X -b",
	"yum, dnf, tdnf, microdnf: -c= -d= -e= -x= --setopt= --enablerepo= --disablerepo= --installroot= --releasever= -y -q -v -C --nogpgcheck --assumeyes",
	"zypper: -c= -R= -D= -r= --root= --config= --non-interactive -n -q -v -x --no-gpg-checks",
	"pip, pip3: -r= -c= -e= -i= -t= --index-url= --extra-index-url= --target= --prefix= --root= --requirement= --constraint= --editable= -q -v -U --user --upgrade --no-deps --no-cache-dir --break-system-packages",
	"npm, pnpm, yarn: --prefix= -w= --workspace= --registry= --cache= -g -D -S -E -O -y --global --save-dev --save --no-save --silent --yes --frozen-lockfile --omit=",
	"npm pkg, pnpm pkg: ",
	"npm pkg set, pnpm pkg set: 1+=kv:scripts.*",
	"npm set-script, pnpm set-script: 2=cmd",
	"npm exec, npm x, pnpm exec, pnpm dlx, yarn exec, yarn dlx: -c=cmd --call=cmd -p= --package= -w= --workspace= -y --yes 1+=argv",
	"uv: --directory= --project= --python= -p= --color= -q -v --no-cache --offline",
	"uv run, uvx, uv tool run, pipx run, poetry run, pdm run, hatch run, pipenv run, rye run: -p= --python= --with= --from= --env-file= --spec= --directory= --project= --extra= --group= -m -q -v --no-project --isolated --frozen --locked --no-sync 1+=argv",
	"uv tool: ",
	"pipx: ",
	"poetry, pdm, pipenv, hatch, rye: -C= --directory= -q -v",
	"bundle, bundler: --gemfile=",
	"bundle exec, bundler exec: --gemfile= --keep-file-descriptors 1+=argv",
	"cabal: --project-file= --builddir= -v= -j=",
	"cabal exec, stack exec: --project-file= --builddir= -v= -j= --package= 1+=argv",
	"stack: --stack-yaml= --resolver= -j=",
	// Build tools, runners and environment managers (issue 37): the options
	// that take code, and the subcommands that run a program.
	"go: -C=",
	"go build, go install, go test, go run, go vet, go generate, go list, go get, go tool: -toolexec=cmd -exec=cmd -vettool=cmd -C= -o=write -p= -tags= -ldflags= -gcflags= -asmflags= -mod= -modfile= -overlay= -pkgdir= -run= -bench= -count= -timeout= -cpu= -parallel= -coverprofile=write -cpuprofile=write -memprofile=write -trace=write -json -v -x -n -race -cover -short -a -i -u -t -d",
	"cmake: partial -E=rest -S= -B= -G= -T= -A= -D= -U= -C= -P= --build= --install= --target= --config= --preset= -j= --parallel= --log-level= -Wdev -Wno-dev --fresh",
	"ctest: partial --test-dir= -C= -R= -E= -L= -j= -S= --output-log=write --test-command=argv --build-and-test= --build-options=",
	"meson: partial -C= --prefix= --buildtype= -D=",
	"meson devenv: posix -C= -w= --workdir= --dump= 1+=argv",
	"tox: partial -e= -c= -r -q -v -p= --parallel=",
	"numactl: posix -C= -N= -m= -p= -i= -l -a -H -s -S= -w= --cpunodebind= --physcpubind= --membind= --preferred= --interleave= --localalloc --all --hardware --show --shmem= --weighted-interleave= 1+=argv",
	"prlimit: posix -p= --pid= -o= --output= --noheadings --raw --verbose --as= --core= --cpu= --data= --fsize= --locks= --memlock= --msgqueue= --nice= --nofile= --nproc= --rss= --rtprio= --rttime= --sigpending= --stack= 1+=argv",
	"watchexec: -e= -w= -i= -f= -s=cmd --shell=cmd -d= --exts= --watch= --ignore= --filter= --debounce= --signal= --delay-run= --on-busy-update= --project-origin= --workdir= -r -c -n -p -o= -W -N --restart --clear --postpone --no-vcs-ignore --no-default-ignore --no-meta --notify 1+=argv",
	"entr: posix -a -c -d -n -p -r -s=cmd -z 1+=argv",
	"nodemon: --exec=cmd -x=cmd -w= --watch= -e= --ext= -i= --ignore= -d= --delay= --signal= -V --verbose -q --quiet --legacy-watch -L",
	"cross-env, cross-env-shell: posix assigns 1+=argv",
	"dotenv, dotenv-cli: posix -e= -c= -v= -p= 1+=argv",
	"direnv: ",
	"direnv exec: 2+=argv",
	"nix: --extra-experimental-features= --option= -L --print-build-logs",
	"nix develop, nix shell: -c=rest --command=rest -i --ignore-environment -k= --keep= -p= --profile=",
	"nix run: 2+=argv",
	"nix-shell: --run=cmd --command=cmd -p= --packages= -I= --arg= --argstr= -A= --attr= --pure",
	"devbox: ",
	"devbox run: -c= --config= 1+=argv",
	"mise, rtx: -C= --cd=",
	"mise exec, mise x, rtx exec, rtx x: -C= --cd= -c=cmd --command=cmd 1+=argv",
	"asdf, rbenv, pyenv, goenv: ",
	"asdf exec, rbenv exec, pyenv exec, goenv exec: posix 1+=argv",
	"conda, mamba, micromamba, pixi: ",
	"conda run, mamba run, micromamba run, pixi run: -n= --name= -p= --prefix= --cwd= --no-capture-output --live-stream -e= --environment= 1+=argv",
	"retry: posix -t= -d= -m= -x= --times= --delay= --until= --while= 1+=argv",
	"cargo watch: -x= -s=cmd --shell=cmd -w= -i= -d= --exec= -c -q --clear --quiet --postpone",
	"cargo: -C= -Z= --config=kv:*.runner|*rustc-wrapper|*rustc_wrapper|*rustc-workspace-wrapper|*.linker --manifest-path= --color= -q -v --frozen --locked --offline",
	"dotnet, mvn, gradle, gradlew, ant, sbt, lein, mix, rebar3, ninja, bazel, buck, swift, zig, rustc, rustup, javac, java, kotlinc, scalac, clang-format, gofmt, goimports, prettier, eslint, black, ruff, isort, flake8, mypy, pylint, pytest, nox, jest, vitest, mocha, tsc, webpack, vite, esbuild, rollup, babel, terraform, tofu, packer, helm, kubectl, k9s, kind, minikube, docker, podman, buildah, skopeo, nerdctl, ctr, crictl, aws, gcloud, az, doctl, flyctl, heroku, vercel, netlify, wrangler, gh, glab, hub, svn, hg, fossil, bzr: partial -C= -o=write",
	"docker exec, podman exec, docker run, podman run, kubectl exec, nerdctl run, nerdctl exec: -e= -u= -w= -v= -p= --env= --user= --workdir= --volume= --name= --entrypoint= --network= --mount= -i -t -d --rm --privileged -it",
	"gcc, g++, cc, c++, c89, c99, clang, clang++, gfortran, tcc: nocluster -wrapper=csv -o=write -I= -L= -l= -D= -U= -x= -std= -include= -imacros= -specs= -B= -MF=write -MT= -MQ= -Xlinker= -Xassembler= -Xpreprocessor= -fplugin= -c -S -E -g -O -O2 -O3 -Wall -v -shared -static -pthread",
	"as, ld, nasm, yasm: nocluster -o=write",
	"install: -t=dir --target-directory=dir -m= -o= -g= -S= -Z= --mode= --owner= --group= --suffix= -b -c -C -d -D -p -s -v -T --backup --compare --directory --preserve-timestamps --strip --verbose --no-target-directory last=write",
	"cp, mv, ln, link: -t=dir --target-directory=dir -S= --suffix= --backup= --reflink= --sparse= --preserve= --no-preserve= -a -b -d -f -i -H -l -L -n -P -p -R -r -s -T -u -v -x --archive --force --recursive --symbolic --no-target-directory --update --verbose --parents last=write",
	"tee: filter=copy -a -i -p --append --ignore-interrupts --output-error= 1+=write",
	"shred: -n= -s= --iterations= --size= --random-source= -f -u -v -x -z --force --remove --verbose --exact --zero 1+=write",
	"truncate: -s= -r= --size= --reference= -c -o --no-create --io-blocks 1+=write",
	"dd: nodd 1+=wpfx:of=",
	"ddrescue: -b= -c= -d= -i= -o= -s= -f -n -r= -v -q 2=write",
	"curl, fetch: fetches -o=write --output=write -D=write --dump-header=write -c=write --cookie-jar=write --trace=write --trace-ascii=write --stderr=write --libcurl=write -K= --config= -d= --data= --data-binary= --data-raw= --data-urlencode= -F= --form= -H= --header= -X= --request= -u= --user= -A= --user-agent= -e= --referer= -b= --cookie= -T= --upload-file= -x= --proxy= -w= --write-out= -m= --max-time= --connect-timeout= --retry= -r= --range= -E= --cert= --key= --cacert= --resolve= --url= -s -S -f -L -k -v -i -I -O -J -g -G -n -N -q -Z -# --silent --show-error --fail --location --insecure --verbose --include --head --remote-name --remote-header-name --compressed --http1.1 --http2",
	"wget: fetches -O=write --output-document=write -o=write --output-file=write -a=write --append-output=write -P= --directory-prefix= -e= --execute= -i= --input-file= -t= --tries= -T= --timeout= -U= --user-agent= --header= --post-data= --post-file= --user= --password= --use-askpass=cmd -q -v -c -N -r -l= -k -p -m -np -nv -nc -nd -x --quiet --continue --recursive --mirror --no-check-certificate --spider",
	"sort: -o=write --output=write -k= -t= -S= -T= --key= --field-separator= --buffer-size= --temporary-directory= --parallel= --batch-size= --compress-program=cmd -b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z",
	// Formatters: which options take a value matters, so that a value is
	// not taken for the dry run (-n) nor the device for a value.
	"mkfs, mke2fs, mkfs.ext2, mkfs.ext3, mkfs.ext4: -L= -U= -b= -C= -d= -E= -e= -G= -g= -i= -I= -J= -l= -m= -M= -N= -o= -O= -r= -t= -T= -z= -c -D -F -j -K -n -q -S -v 1=dev",
	"mkfs.vfat, mkfs.fat, mkfs.msdos, mkdosfs: -n= -F= -S= -s= -f= -i= -h= -r= -R= -b= -l= -D= -g= -m= -M= -a -c -C -I -v 1=dev",
	"mkfs.xfs: -L= -b= -d= -i= -l= -n= -m= -p= -r= -s= -f -q -K -N 1=dev",
	"mkfs.btrfs: -L= -U= -d= -m= -n= -s= -O= -r= -R= -M -f -q -K 1=dev",
	"mkfs.exfat, mkexfatfs: -L= -n= -c= -b= -i= -s= -f -q -v 1=dev",
	"mkfs.ntfs, mkntfs: -L= -c= -s= -p= -H= -S= -z= -n -f -Q -q -v -F -I 1=dev",
	"mkfs.f2fs: -l= -a= -c= -d= -e= -E= -i= -o= -O= -s= -t= -z= -f -q 1=dev",
	"mkswap: -L= -U= -p= -e= --label= --uuid= --pagesize= --endianness= -c -f -v 1=dev",
	"mkfs.minix, mkfs.bfs, mkfs.cramfs, mkfs.jfs, mkfs.reiserfs, mkfs.udf, mkreiserfs: -L= -l= -b= -V= -n= -i= -f -q 1=dev",
	"wipefs: -o= -t= -b= -p= --offset= --types= --backup= -a -f -n -q -i -J --all --force --no-act --noheadings --json 1+=dev",
	"badblocks: -b= -c= -d= -e= -i= -o=write -p= -t= -w -n -s -v -f -B 1=dev",
	"fdisk, cfdisk, sgdisk, gdisk, parted, blkdiscard, sfdisk: -b= -c= -C= -H= -S= -u= -L= -t= -X= -Y= -w= -W= -N= -A= -U= -o= --sector-size= --label= --type= --output= -a -f -s -v -q 1=dev",
	"hdparm, sdparm, smartctl, blockdev, lsblk, blkid, dumpe2fs, tune2fs, e2fsck, fsck, xfs_info, xfs_repair, resize2fs, losetup, dmsetup, lvcreate, lvremove, vgcreate, pvcreate, mdadm, zpool, zfs: -o= -t= -L= -U= -c= -C= -i= -e= -s= -n -f -v -a -p -y",
	"ssh-keygen: -D=cmd -f= -t= -b= -C= -N= -P= -E= -F= -R= -I= -n= -V= -z= -O= -Y= -q -l -y -A -H -K -e -i -p -s -c",
	"ssh-keyscan: -f= -p= -t= -T= -4 -6 -c -D -H -v",
	"openssl: ",
	"pkexec: 1+=argv",
	"screen: -c= -e= -h= -L -Logfile=write -S= -p= -t= -X= -d -m -D -R -r -x -q -A -a -U -ls -list -wipe 1+=argv",
	"tmux: -L= -S= -f= -c=cmd -T= -2 -C -l -N -u -v",
	"tmate: -L= -S= -f= -k= -r= -c=cmd -F -v",
	"script: -c=cmd --command=cmd -E= -I=write -O=write -B=write -T=write -t= -m= --echo= --log-in=write --log-out=write --log-io=write --log-timing=write --logging-format= -a -e -f -q --append --return --flush --quiet 1=write",
	"at, batch: -f= -q= -t= -m -M -l -r -d -c -v -V",
	"crontab: -u= -e -l -r -i",
	"su: -c=cmd --command=cmd -s= --shell= -g= -G= -w= -l -m -p -P",
	"runuser: -c=cmd --command=cmd -u= -g= -G= -s= -l -m -p",
	"sg, newgrp: -c=cmd",
	"capsh: --caps= --addamb= --delamb= --drop= --inh= --user= --uid= --gid= --groups= --chroot= --secbits= --keep=",
	"setpriv, gosu, su-exec, sudoedit, chpst, setuidgid, machinectl: ",
	"chroot: --userspec= --groups= --skip-chdir 2+=argv",
	"emacsclient: -e=code:lisp --eval=code:lisp -a=cmd --alternate-editor=cmd -s= -f= -c -t -n -nw",
	"less, more, most, pg: -o=write --log-file=write -O=write --LOG-FILE=write -x= -b= -h= -y= -j= -z= -P= -p= -t= -T= --prompt= --pattern= --tag= -R -r -S -N -n -F -X -E -e -i -I -K -M -m -q -Q -s -w -c",
	"man: -P=cmd --pager=cmd -H=cmd --html=cmd -L= -M= -S= -C= -m= -E= -l -k -f -a -w -W",
	"journalctl, systemctl, loginctl, busctl, timedatectl, hostnamectl, localectl, networkctl, resolvectl, coredumpctl: -u= -t= -p= -n= -o= -S= -U= -b= -M= -H= --unit= --since= --until= --output= --host= --machine= --property= -f -r -x -e -q -a -l --user --system --no-pager --now --force --full --quiet",
	"enscript: -I=cmd --filter=cmd -o=write --output=write -p=write -b= -f= -F= -M= -e= -q -B -G -r -2",
	"gem: ",
	"gem open: -e=cmd --editor=cmd -v= --version=",
	"rake: -f= -C= -I= -r= -e=code:ruby -p=code:ruby -E=code:ruby --execute=code:ruby --execute-print=code:ruby --execute-continue=code:ruby -q -s -t -T -v -P -n",
	"pry, byebug: -e=code:ruby -r= -I=",
	"pwsh, powershell: -c=cmd -Command=cmd -command=cmd -File= -f= -NoProfile -NonInteractive -nop -noni",
	"cmd.exe: ",
	"mosh: --ssh=cmd -p= --port= --server=cmd 2+=words",
	"autossh: -M= -f -o=kv:proxycommand|localcommand -p= -i= -l= -L= -R= -D= -N -T 2+=words",
	"sshfs: -o=kv:ssh_command|sshfs_sync|proxycommand -p= -F=",
	"xterm, urxvt, gnome-terminal, konsole, alacritty, kitty, st, terminator, xfce4-terminal, tilix: -e=rest -x=rest --command=cmd -T= -geometry= -fn= -bg= -fg= --title= --working-directory=",
	"tic, infocmp, toe: -o= -e= -v=",
	"nmcli, iw, iwconfig, ifconfig, route, ss, netstat, ping, ping6, traceroute, tracepath, dig, nslookup, host, whois, arp, mtr: -c= -i= -w= -W= -p= -t= -s= -I= -q= -n -v -4 -6",
	"iptables, ip6tables, iptables-legacy, iptables-nft, ip6tables-legacy, ip6tables-nft, iptables-save, iptables-restore, nft, ufw, firewall-cmd, setenforce, getenforce, sestatus, shutdown, reboot, halt, poweroff, init, telinit, kexec, service, mount, umount, nvme, cryptsetup, diskpart, format, mkisofs, genisoimage, xorriso: ",
	"find: ",
	"eval, trap, source, .: ",
	"zsh-newuser-install, compinit: ",

	"ansible: -a=cmd --args=cmd -m= --module-name= -i= --inventory= -u= --user= -e= --extra-vars= -f= --forks= -b --become -K -k -v -C --check",

	// Programs whose verbs act on something else than this machine (a
	// virtual machine, a service, a cluster): their words are data, never
	// the machine's reboot or shutdown.
	"vagrant, virsh, VBoxManage, vboxmanage, multipass, lxc, incus, qm, pct, colima, limactl, orbctl, podman-machine, docker-compose, compose, pm2, supervisorctl, forever, foreman, overmind, honcho, circusctl, monit, s6-svc, sv, rc-service, rc-update, update-rc.d, chkconfig, launchctl, brew, port, snap, flatpak, nix-env, guix, nvm, sdk, jenv, ansible-playbook, ansible-galaxy, salt, salt-call, chef-client, pulumi, cdk, serverless, sam, eksctl, k3d, k3s, microk8s, oc, istioctl, linkerd, argocd, flux, skaffold, tilt, devspace, okteto, telepresence, stern, kubectx, kubens, kustomize, helmfile, vault, consul, nomad, boundary, waypoint, redis-cli, mongosh, mongo, cqlsh, influx, clickhouse-client, etcdctl, nats, kafkacat, kcat, rabbitmqctl, celery, gunicorn, uvicorn, hypercorn, daphne, flask, django-admin, rails, rackup, puma, unicorn, thin, php-fpm, nginx, apachectl, httpd, caddy, traefik, haproxy, envoy, certbot-auto, mkcert, step, cfssl, ngrok, cloudflared, tailscale, zerotier-cli, wg, wg-quick, openvpn3, nmtui, bluetoothctl, pactl, amixer, xrandr, xset, gsettings, dconf, defaults, scutil, pmset, networksetup, softwareupdate, diskutil, hdiutil, tmutil, mdutil, spctl, csrutil, nvram, bless: ",

	// Programs that only read their arguments: every word is data.
	// Filters: what they print is a function of what they read (a pure
	// decoder), so that literal text through them is still known
	// (echo cm0gLXJmIC8= | base64 -d | sh). filter=KIND names the function,
	// when=OPTIONS the options that make it one (base64 without -d encodes).
	"cat: filter=copy -A -b -e -E -n -s -t -T -u -v",
	"base64: filter=base64-decode when=-d|--decode|-D -i -w= --ignore-garbage --wrap=",
	"base32: filter=base32-decode when=-d|--decode -i -w= --ignore-garbage --wrap=",
	"xxd: filter=hex-decode when=-r -p -c= -g= -l= -s= -u --ps --plain --revert",
	"rev: filter=reverse",
	"tr: filter=translate",
	"echo, printf, true, false, :, test, [, [[, pwd, cd, pushd, popd, dirs, exit, return, export, declare, typeset, local, readonly, set, unset, shift, read, mapfile, readarray, getopts, wait, jobs, fg, bg, disown, kill, killall, pkill, pgrep, alias, unalias, hash, type, which, whereis, whatis, apropos, help, umask, ulimit, times, let, shopt, enable, caller, complete, compgen, history, fc, logout, suspend, sleep, usleep, yes, seq, date, cal, uname, hostname, id, whoami, groups, users, who, w, last, uptime, tty, stty, tput, reset, clear, locale, getconf, nproc, arch, lscpu, lsmem, lsusb, lspci, lsmod, lshw, free, vmstat, iostat, mpstat, sar, top, htop, btop, atop, ps, pstree, pidof, lsof, fuser, du, df, stat, file, ls, dir, vdir, tree, exa, eza, lsd, tac, nl, head, tail, wc, cut, paste, join, comm, diff, diff3, sdiff, cmp, patch, expand, unexpand, fold, fmt, pr, column, uniq, shuf, od, hexdump, strings, basenc, md5sum, sha1sum, sha224sum, sha256sum, sha384sum, sha512sum, b2sum, cksum, sum, grep, egrep, fgrep, rg, ag, ack, jq, yq, xq, gojq, jless, fx, gron, csvlook, mlr, xsv, qsv, bat, batcat, highlight, pygmentize, realpath, readlink, basename, dirname, pathchk, mktemp, mkdir, rmdir, touch, chmod, chown, chgrp, chattr, lsattr, getfacl, setfacl, rm, unlink, mkfifo, mknod, sync, gzip, gunzip, zcat, bzip2, bunzip2, bzcat, xz, unxz, xzcat, zstd, unzstd, zstdcat, lz4, lzma, unlzma, 7z, 7za, unzip, zipinfo, unrar, cpio, ar, ranlib, nm, objdump, readelf, size, strip, addr2line, c++filt, ldd, gzexe, iconv, dos2unix, unix2dos, recode, envsubst, gettext, ngettext, msgfmt, xgettext, numfmt, factor, expr, units, tsort, csplit, look, spell, aspell, hunspell, wdiff, colordiff, delta, difft, tldr, cheat, fortune, cowsay, figlet, toilet, lolcat, banner, sl, notify-send, wall, write, mesg, logger, systemd-cat, printenv, dircolors, curlie, http, https, xh, httpie, ab, wrk, hey, siege, vegeta, gpg, gpg2, age, ssh-add, keychain, pass, sqlformat, sqlfluff, shellcheck, shfmt, hadolint, yamllint, jsonlint, markdownlint, actionlint, codespell, cloc, tokei, scc, ctags, cscope, global, gtags, inotifywait, fswatch, getent",
}

// codeVarTable are the variables whose value a program runs as a command
// line (git's ssh command and pager, man's and less's pagers, editors,
// bash's prompt command, cargo's wrappers and runners, make's compilers,
// npm's script shell). A * stands for any part of a name, once.
var codeVarTable = []string{
	"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_SEQUENCE_EDITOR", "GIT_PROXY_COMMAND",
	"GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL",
	"LESSOPEN", "LESSCLOSE", "PROMPT_COMMAND", "BROWSER", "BASH_ENV", "ENV",
	"RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER", "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
	"CARGO_TARGET_*_RUNNER", "CARGO_TARGET_*_LINKER", "RUSTC", "RUSTDOC",
	"CC", "CXX", "CPP", "LD", "FC", "HOSTCC", "CC_FOR_BUILD",
	"npm_config_script_shell", "NPM_CONFIG_SCRIPT_SHELL", "YARN_SCRIPT_SHELL", "npm_config_git",
}

// codeVars and codeVarPatterns are codeVarTable as isCodeVar reads it.
var codeVars, codeVarPatterns = func() (map[string]bool, []string) {
	m := map[string]bool{}
	var pats []string
	for _, n := range codeVarTable {
		if strings.Contains(n, "*") {
			pats = append(pats, n)
		} else {
			m[n] = true
		}
	}
	return m, pats
}()

// The kinds of programs the judging reads by name: what each kind does is
// in commands.go and builtin.go, which program is of which kind is here.

// privilegeRunners run a command as another user, with other capabilities,
// or in another namespace or service manager: whatever they run, they are
// refused for what they are.
var privilegeRunners = map[string]bool{
	"sudo": true, "su": true, "doas": true, "pkexec": true, "run0": true, "sudoedit": true, "gosu": true,
	"su-exec": true, "runuser": true, "setpriv": true, "capsh": true, "nsenter": true, "systemd-run": true,
	"sg": true, "newgrp": true, "chpst": true, "setuidgid": true,
}

// stringRunners are the programs stringRunner knows, which unwrap asks it
// about (by their kind): the others run no string.
var stringRunners = []string{"flock", "parallel"}

// shells are the programs that are a shell: their -c string, their stdin
// and their script operand are shell code (shellNested).
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "mksh": true,
	"yash": true, "fish": true, "rbash": true, "ksh93": true, "pdksh": true, "oksh": true, "loksh": true, "rksh": true,
	"posh": true, "csh": true, "tcsh": true, "hush": true, "msh": true}

// interpreters read a program from stdin when given no program argument; the
// value lists their options that take the program or a value.
var interpreters = map[string]string{
	"python": "cmWXQ", "python2": "cmWXQ", "python3": "cmWXQ", "perl": "eElImMx", "ruby": "eIrE",
	"node": "epr", "nodejs": "epr", "php": "rfBRFEdcz", "lua": "el", "tclsh": "", "awk": "fv",
}

// harmlessBuiltins run no program; allowlist mode never needs to name them.
var harmlessBuiltins = map[string]bool{
	"cd": true, "pwd": true, "true": true, "false": true, ":": true, "test": true, "[": true, "echo": true,
	"printf": true, "exit": true, "return": true, "export": true, "set": true, "unset": true, "shift": true,
	"read": true, "local": true, "declare": true, "wait": true,
}
