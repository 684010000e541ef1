// A Kerberos KDC for a test realm (Apache Kerby's SimpleKdcServer, as
// HBase's own secure Thrift tests use), with the principals and keytabs a
// secured hbase-mini and the proxy in front of it need, and a krb5.conf
// that both Java and MIT Kerberos read.
package hsp;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import org.apache.kerby.kerberos.kerb.KrbException;
import org.apache.kerby.kerberos.kerb.server.KdcConfigKey;
import org.apache.kerby.kerberos.kerb.server.SimpleKdcServer;

final class Kdc {
  static final String REALM = "HSP.TEST";
  static final String HOST = "localhost";

  /** Who gets a principal and a keytab DIR/NAME.keytab. */
  static final String[][] PRINCIPALS = {
    // HBase itself: master, region servers and the Thrift servers
    {"hbase", "hbase/" + HOST},
    // the Thrift HTTP servers' SPNEGO principal
    {"http", "HTTP/" + HOST},
    // the proxy's client principal: granted every permission
    {"proxy", "proxy"},
    // a principal the KDC knows and HBase grants nothing
    {"stranger", "stranger"},
  };

  final File dir;
  final long ticketLifetimeSec;
  SimpleKdcServer server;
  int port;

  Kdc(File dir, long ticketLifetimeSec) {
    this.dir = dir;
    this.ticketLifetimeSec = ticketLifetimeSec;
  }

  static String principal(String name) {
    for (String[] p : PRINCIPALS) {
      if (p[0].equals(name)) {
        return p[1] + "@" + REALM;
      }
    }
    throw new IllegalArgumentException("no principal named " + name);
  }

  File keytab(String name) {
    return new File(dir, name + ".keytab");
  }

  File krb5Conf() {
    return new File(dir, "krb5.conf");
  }

  void start() throws IOException, KrbException {
    if (!dir.isDirectory() && !dir.mkdirs()) {
      throw new IOException("cannot create --kdc " + dir);
    }
    port = HBaseMini.freePort(HOST);
    server = new SimpleKdcServer();
    server.setWorkDir(dir);
    server.setKdcHost(HOST);
    server.setKdcRealm(REALM);
    server.setKdcTcpPort(port);
    server.setAllowUdp(false);
    if (ticketLifetimeSec > 0) {
      // tickets that expire while a test runs: renewal and re-login paths
      server.getKdcConfig().setLong(KdcConfigKey.MAXIMUM_TICKET_LIFETIME, ticketLifetimeSec);
      server.getKdcConfig().setLong(KdcConfigKey.MAXIMUM_RENEWABLE_LIFETIME, ticketLifetimeSec);
    }
    server.init();
    server.start();
    writeKrb5Conf();
    // Java's Kerberos reads this file, not Kerby's own client settings
    System.setProperty("java.security.krb5.conf", krb5Conf().getAbsolutePath());
    for (String[] p : PRINCIPALS) {
      server.createAndExportPrincipals(keytab(p[0]), p[1] + "@" + REALM);
    }
    Files.writeString(new File(dir, "realm").toPath(), REALM + "\n");
  }

  /**
   * New random keys for NAME in the KDC; its old keytab goes stale (what an
   * operator meets after a re-key).  The new keys go to DIR/NAME.new.keytab.
   */
  File rekey(String name) throws KrbException {
    String p = principal(name);
    server.deletePrincipal(p);
    File fresh = new File(dir, name + ".new.keytab");
    fresh.delete();
    server.createAndExportPrincipals(fresh, p);
    return fresh;
  }

  private void writeKrb5Conf() throws IOException {
    // TCP only (the KDC has no UDP), AES only (MIT 1.20 and Java 17 agree
    // on those); no reverse DNS, so "localhost" is the host in every
    // principal whatever the machine is called
    String conf =
        "[libdefaults]\n"
            + "    default_realm = " + REALM + "\n"
            + "    udp_preference_limit = 1\n"
            + "    rdns = false\n"
            + "    dns_canonicalize_hostname = false\n"
            + "    dns_lookup_kdc = false\n"
            + "    dns_lookup_realm = false\n"
            + "    ticket_lifetime = " + (ticketLifetimeSec > 0 ? ticketLifetimeSec + "s" : "24h") + "\n"
            + "    forwardable = true\n"
            + "    default_tkt_enctypes = aes128-cts-hmac-sha1-96\n"
            + "    default_tgs_enctypes = aes128-cts-hmac-sha1-96\n"
            + "    permitted_enctypes = aes128-cts-hmac-sha1-96\n"
            + "\n[realms]\n"
            + "    " + REALM + " = {\n"
            + "        kdc = " + HOST + ":" + port + "\n"
            + "    }\n"
            + "\n[domain_realm]\n"
            + "    " + HOST + " = " + REALM + "\n";
    Files.write(krb5Conf().toPath(), conf.getBytes(StandardCharsets.UTF_8));
  }

  void stop() {
    if (server != null) {
      try {
        server.stop();
      } catch (KrbException ex) {
        System.err.println("hbase-mini: KDC stop: " + ex);
      }
      server = null;
    }
  }
}
