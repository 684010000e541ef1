"""krb5lib: a throwaway MIT Kerberos realm (krb5kdc on loopback) for the
tests of secure transports (tests/secure, the SASL scan oracle)."""
# Nothing here reads or writes a system file: krb5.conf and kdc.conf live in
# a temporary directory and reach every child (and this process's GSSAPI
# calls) through KRB5_CONFIG / KRB5_KDC_PROFILE; the replay cache goes
# there too (KRB5RCACHEDIR), as do the database, the stash and the logs.

import os
import shutil
import socket
import subprocess
import tempfile
import time

from hsptest import free_port

REALM = 'HSP.TEST'
# Debian installs the KDC tools outside a normal user's PATH.
SBIN_DIRS = ('/usr/sbin', '/sbin', '/usr/bin')


class Krb5Error(Exception):
    pass


def find_tool(name):
    for d in SBIN_DIRS:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    p = shutil.which(name)
    if p is None:
        raise Krb5Error(f'{name} not found: install krb5-kdc, '
                        'krb5-admin-server and krb5-user '
                        '(.ci/quickstart test does)')
    return p


class Realm:
    """A realm with its KDC running; use as a context manager.

    principal(name) creates a principal with a random key and returns the
    path of a keytab holding it; kinit() gets a ticket into a ccache of its
    own.  env() is the environment a Kerberos client or server of this
    realm needs."""

    def __init__(self, realm=REALM, ticket_lifetime='10h', clockskew=300,
                 kdc_env=None):
        self.realm = realm
        # extra environment of krb5kdc alone (a test's clock shim)
        self.kdc_env = dict(kdc_env or {})
        self.dir = tempfile.mkdtemp(prefix='hsp-krb5-')
        self.port = None
        self.kdc = None
        self.lifetime = ticket_lifetime
        self.clockskew = clockskew
        self.started_in = None

    # -- configuration -------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _write_conf(self):
        r = self.realm
        with open(self.path('krb5.conf'), 'w') as f:
            f.write(f"""[libdefaults]
    default_realm = {r}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    ignore_acceptor_hostname = false
    ticket_lifetime = {self.lifetime}
    clockskew = {self.clockskew}
    udp_preference_limit = 1
    default_ccache_name = FILE:{self.path('default.ccache')}
    default_keytab_name = FILE:{self.path('default.keytab')}
    default_client_keytab_name = FILE:{self.path('default-client.keytab')}

[realms]
    {r} = {{
        kdc = 127.0.0.1:{self.port}
    }}

[domain_realm]
    localhost = {r}
    127.0.0.1 = {r}
""")
        with open(self.path('kdc.conf'), 'w') as f:
            f.write(f"""[kdcdefaults]
    kdc_listen = 127.0.0.1:{self.port}
    kdc_tcp_listen = 127.0.0.1:{self.port}

[realms]
    {r} = {{
        database_name = {self.path('principal')}
        key_stash_file = {self.path('stash')}
        acl_file = {self.path('kadm5.acl')}
        max_life = {self.lifetime}
        max_renewable_life = 1d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{self.path('kdc.log')}
    admin_server = FILE:{self.path('kadmin.log')}
    default = FILE:{self.path('krb5.log')}
""")
        open(self.path('kadm5.acl'), 'w').close()

    def env(self, ccache=None, base=None):
        e = dict(os.environ if base is None else base)
        e['KRB5_CONFIG'] = self.path('krb5.conf')
        e['KRB5_KDC_PROFILE'] = self.path('kdc.conf')
        e['KRB5RCACHEDIR'] = self.dir
        # No tracing: it prints session keys.
        e.pop('KRB5_TRACE', None)
        e.pop('KRB5_KTNAME', None)
        e.pop('KRB5_CLIENT_KTNAME', None)
        e['KRB5CCNAME'] = 'FILE:' + (ccache or self.path('default.ccache'))
        return e

    def _run(self, argv, stdin=None):
        p = subprocess.run(argv, input=stdin, env=self.env(),
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise Krb5Error(f'{os.path.basename(argv[0])} failed '
                            f'({p.returncode}): {p.stderr.strip()}')
        return p.stdout

    # -- lifecycle -----------------------------------------------------
    def start(self):
        t0 = time.monotonic()
        self.port = free_port()
        self._write_conf()
        # -W: the master key may come from a weak source; the realm is
        # thrown away after the run, and /dev/random must not block CI.
        self._run([find_tool('kdb5_util'), 'create', '-s', '-W',
                   '-r', self.realm, '-P', os.urandom(12).hex()])
        self.kdc = subprocess.Popen(
            [find_tool('krb5kdc'), '-n', '-r', self.realm,
             '-P', self.path('kdc.pid')],
            env=dict(self.env(), **self.kdc_env), stdout=subprocess.DEVNULL,
            stderr=open(self.path('kdc.stderr'), 'w'))
        self._wait_ready()
        self.started_in = time.monotonic() - t0
        return self

    def _wait_ready(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.kdc.poll() is not None:
                raise Krb5Error('krb5kdc exited with %d: %s' % (
                    self.kdc.returncode, self._tail('kdc.stderr')
                    or self._tail('kdc.log')))
            try:
                socket.create_connection(('127.0.0.1', self.port),
                                         timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise Krb5Error('krb5kdc did not listen on port %d' % self.port)

    def _tail(self, name, n=2000):
        try:
            with open(self.path(name)) as f:
                return f.read()[-n:].strip()
        except OSError:
            return ''

    def stop(self):
        if self.kdc is not None and self.kdc.poll() is None:
            self.kdc.terminate()
            try:
                self.kdc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kdc.kill()
                self.kdc.wait()
        self.kdc = None
        if os.environ.get('HSP_KEEP_REALM'):
            print(f'krb5lib: kept {self.dir}')
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

    # -- principals and tickets ------------------------------------------
    def qualify(self, name):
        return name if '@' in name else f'{name}@{self.realm}'

    def add_principals(self, *names, keytab=None):
        """Creates the principals with random keys; with keytab, exports
        them all to that file.  One kadmin.local run for the lot."""
        cmds = [f'addprinc -randkey {self.qualify(n)}' for n in names]
        if keytab is not None:
            cmds += [f'ktadd -k {keytab} {self.qualify(n)}' for n in names]
        self._run([find_tool('kadmin.local'), '-r', self.realm],
                  stdin='\n'.join(cmds) + '\n')
        return keytab

    def principal(self, name, keytab=None):
        """Creates one principal; returns the path of its own keytab."""
        keytab = keytab or self.path(name.replace('/', '_').split('@')[0]
                                     + '.keytab')
        return self.add_principals(name, keytab=keytab)

    def export(self, name, keytab):
        """Exports name's keys again: every ktadd makes new keys, so an
        older keytab of the same principal stops working (a stale keytab
        for the tests)."""
        self._run([find_tool('kadmin.local'), '-r', self.realm, '-q',
                   f'ktadd -k {keytab} {self.qualify(name)}'])
        return keytab

    def kinit(self, name, keytab, ccache=None):
        """A ticket for name from keytab into ccache (made up if None)."""
        ccache = ccache or self.path(name.replace('/', '_').split('@')[0]
                                     + '.ccache')
        p = subprocess.run([find_tool('kinit'), '-k', '-t', keytab,
                            self.qualify(name)],
                           env=self.env(ccache=ccache), capture_output=True,
                           text=True, timeout=30)
        if p.returncode != 0:
            raise Krb5Error(f'kinit {name}: {p.stderr.strip()}')
        return ccache
