// HBase's own security, set through HBase's and Hadoop's own keys: the
// whole mini cluster on Kerberos (as HBase's secure Thrift tests run it),
// the Thrift servers with SASL or SPNEGO, TLS on the HTTP servers, doAs
// rules, and who is granted what.
package hsp;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.security.access.AccessControlClient;
import org.apache.hadoop.hbase.security.access.Permission;
import org.apache.hadoop.security.UserGroupInformation;

final class Secure {
  private Secure() {}

  static final String ACCESS_CONTROLLER =
      "org.apache.hadoop.hbase.security.access.AccessController";
  static final String STORE_PASSWORD = "hbase-mini";
  /** The one user the proxy may act for with doAs (--proxyuser). */
  static final String DOAS_ALLOWED = "alice";

  static void configure(HBaseMini mini, Configuration conf) {
    Kdc kdc = mini.kdc;
    String hbase = Kdc.principal("hbase");
    String hbaseKeytab = kdc.keytab("hbase").getAbsolutePath();
    conf.set("hadoop.security.authentication", "kerberos");
    conf.set("hbase.security.authentication", "kerberos");
    // principals of the default realm map to their first component:
    // hbase/localhost@HSP.TEST is "hbase", proxy@HSP.TEST is "proxy"
    conf.set("hadoop.security.auth_to_local", "DEFAULT");
    // the master, the region servers and the Thrift servers log in as
    // hbase/localhost: "localhost" literally, not _HOST, so it does not
    // depend on what this machine's name resolves to
    for (String role : new String[] {"master", "regionserver"}) {
      conf.set("hbase." + role + ".kerberos.principal", hbase);
      conf.set("hbase." + role + ".keytab.file", hbaseKeytab);
    }
    conf.set("hbase.thrift.kerberos.principal", hbase);
    conf.set("hbase.thrift.keytab.file", hbaseKeytab);
    // authorization: HBase's AccessController, hbase the superuser; the
    // proxy's principal is granted everything once the cluster is up,
    // "stranger" nothing
    conf.setBoolean("hbase.security.authorization", true);
    conf.set("hbase.coprocessor.master.classes", ACCESS_CONTROLLER);
    conf.set("hbase.coprocessor.region.classes", ACCESS_CONTROLLER);
    conf.set("hbase.coprocessor.regionserver.classes", ACCESS_CONTROLLER);
    conf.set("hbase.superuser", "hbase");
    // the Thrift servers run each call as the client's principal: hbase
    // may impersonate anyone
    conf.set("hadoop.proxyuser.hbase.hosts", "*");
    conf.set("hadoop.proxyuser.hbase.groups", "*");
    if (mini.saslQop != null) {
      conf.set("hbase.thrift.security.qop", mini.saslQop);
    }
    if (mini.spnego) {
      conf.set("hbase.thrift.spnego.principal", Kdc.principal("http"));
      conf.set("hbase.thrift.spnego.keytab.file", kdc.keytab("http").getAbsolutePath());
    }
    if (mini.proxyUser) {
      // doAs: the proxy may act for alice and nobody else
      conf.setBoolean("hbase.thrift.support.proxyuser", true);
      conf.set("hadoop.proxyuser.proxy.hosts", "*");
      conf.set("hadoop.proxyuser.proxy.users", DOAS_ALLOWED);
    }
  }

  /** The HTTP servers on TLS: a keystore made here, its CA as PEM. */
  static void configureTls(HBaseMini mini, Configuration conf) throws IOException {
    File dir = mini.kdcDir != null ? mini.kdcDir : mini.dataDir;
    File store = new File(dir, "keystore.jks");
    File ca = new File(dir, "ca.pem");
    if (!store.exists()) {
      store.getParentFile().mkdirs();
      run(
          "keytool", "-genkeypair", "-alias", "hbase", "-keyalg", "RSA", "-keysize", "2048",
          "-dname", "CN=localhost", "-ext", "SAN=dns:localhost,ip:127.0.0.1",
          "-ext", "BC:c=ca:true", "-validity", "30",
          "-keystore", store.getPath(), "-storetype", "JKS",
          "-storepass", STORE_PASSWORD, "-keypass", STORE_PASSWORD);
      run(
          "keytool", "-exportcert", "-rfc", "-alias", "hbase", "-keystore", store.getPath(),
          "-storepass", STORE_PASSWORD, "-file", ca.getPath());
    }
    conf.setBoolean("hbase.thrift.ssl.enabled", true);
    conf.set("hbase.thrift.ssl.keystore.store", store.getAbsolutePath());
    conf.set("hbase.thrift.ssl.keystore.password", STORE_PASSWORD);
    conf.set("hbase.thrift.ssl.keystore.keypassword", STORE_PASSWORD);
  }

  private static void run(String... cmd) throws IOException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed: " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted: " + cmd[0]);
    }
  }

  /** Hadoop's security on, this JVM logged in as hbase/localhost. */
  static void login(Configuration conf) throws IOException {
    UserGroupInformation.setConfiguration(conf);
    UserGroupInformation.loginUserFromKeytab(
        conf.get("hbase.master.kerberos.principal"), conf.get("hbase.master.keytab.file"));
  }

  /**
   * Grants the proxy's principal (and alice, whom it may act for) every
   * permission, as hbase, the superuser; waits for the ACL table first.
   */
  static void grant(HBaseMini mini, Configuration conf) throws Exception {
    List<String> users = new ArrayList<>(List.of("proxy"));
    if (mini.proxyUser) {
      users.add(DOAS_ALLOWED);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(mini.readyTimeoutSec);
    Throwable last = null;
    try (Connection c = ConnectionFactory.createConnection(conf)) {
      while (System.nanoTime() < deadline) {
        try {
          for (String u : users) {
            AccessControlClient.grant(c, u, Permission.Action.values());
          }
          return;
        } catch (Throwable t) {
          // hbase:acl is created by the master after it is "initialized"
          last = t;
          Thread.sleep(500);
        }
      }
    }
    throw new IOException("could not grant " + users + ": " + last, last);
  }
}
