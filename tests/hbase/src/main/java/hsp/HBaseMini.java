// A real HBase for the tests: ZooKeeper, a master and N region servers in
// one JVM (HBase's own LocalHBaseCluster and MiniZooKeeperCluster, the
// standalone mode of bin/hbase), with HBase's own Thrift1 and Thrift2
// servers in front of it, configured only through HBase's own keys.
package hsp;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import sun.misc.Signal;

public final class HBaseMini {
  /** One Thrift server of ours to start: which service, where. */
  static final class Endpoint {
    final int kind; // 1 = Thrift1 (Hbase), 2 = Thrift2 (THBaseService)
    final String host;
    int port;
    ThriftRunner runner;

    Endpoint(int kind, String hostPort) {
      this.kind = kind;
      int colon = hostPort.lastIndexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException(
            "--thrift" + kind + " wants HOST:PORT, not '" + hostPort + "'");
      }
      this.host = hostPort.substring(0, colon);
      this.port = Integer.parseInt(hostPort.substring(colon + 1));
    }

    String name() {
      return host + ":" + port;
    }
  }

  final List<Endpoint> endpoints = new ArrayList<>();
  int regionServers = 1;
  boolean compact;
  boolean framed;
  boolean http;
  String filters;
  long splitSize;
  File dataDir;
  boolean keepDataDir;
  int readyTimeoutSec = 300;
  /** --kdc DIR: a test realm, and HBase secured with Kerberos in it. */
  File kdcDir;
  long ticketLifetimeSec;
  /** --sasl-qop: the Thrift servers' SASL quality of protection. */
  String saslQop;
  boolean spnego;
  boolean https;
  boolean proxyUser;
  Kdc kdc;
  /** --conf KEY=VALUE pairs, set last: any HBase key, as hbase-site.xml would. */
  final List<String[]> confs = new ArrayList<>();

  MiniZooKeeperCluster zk;
  LocalHBaseCluster cluster;

  static void usage(String why) {
    System.err.println("hbase-mini: " + why);
    System.err.println(
        "usage: hbase-mini --thrift1 HOST:PORT --thrift2 HOST:PORT [--region-servers N]\n"
            + "      [--protocol binary|compact] [--transport buffered|framed] [--http]\n"
            + "      [--filters Name:fully.qualified.Class,...] [--split-size BYTES]"
            + " [--data-dir DIR]\n"
            + "      [--kdc DIR [--ticket-lifetime SECONDS]] [--sasl-qop auth|auth-int|auth-conf]\n"
            + "      [--spnego] [--https] [--proxyuser] [--conf KEY=VALUE]...\n"
            + "  --thrift1 and --thrift2 may be repeated (several servers over one"
            + " cluster); PORT 0 picks a free port");
    System.exit(2);
  }

  void parse(String[] args) {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v = null;
      if (a.startsWith("--") && a.contains("=")) {
        v = a.substring(a.indexOf('=') + 1);
        a = a.substring(0, a.indexOf('='));
      }
      boolean wantsValue =
          !(a.equals("--http")
              || a.equals("--spnego")
              || a.equals("--https")
              || a.equals("--proxyuser")
              || a.equals("--help")
              || a.equals("-h"));
      if (wantsValue && v == null) {
        if (i + 1 >= args.length) {
          usage(a + " needs a value");
        }
        v = args[++i];
      }
      switch (a) {
        case "--thrift1":
          endpoints.add(new Endpoint(1, v));
          break;
        case "--thrift2":
          endpoints.add(new Endpoint(2, v));
          break;
        case "--region-servers":
          regionServers = Integer.parseInt(v);
          if (regionServers < 1 || regionServers > 16) {
            usage("--region-servers takes 1 to 16");
          }
          break;
        case "--protocol":
          if (!v.equals("binary") && !v.equals("compact")) {
            usage("--protocol is binary or compact");
          }
          compact = v.equals("compact");
          break;
        case "--transport":
          if (!v.equals("buffered") && !v.equals("framed")) {
            usage("--transport is buffered or framed");
          }
          framed = v.equals("framed");
          break;
        case "--http":
          http = true;
          break;
        case "--filters":
          filters = v;
          break;
        case "--split-size":
          splitSize = Long.parseLong(v);
          break;
        case "--data-dir":
          dataDir = new File(v);
          keepDataDir = true;
          break;
        case "--conf":
          {
            int eq = v.indexOf('=');
            if (eq <= 0) {
              usage("--conf wants KEY=VALUE, not '" + v + "'");
            }
            confs.add(new String[] {v.substring(0, eq), v.substring(eq + 1)});
            break;
          }
        case "--kdc":
          kdcDir = new File(v).getAbsoluteFile();
          break;
        case "--ticket-lifetime":
          ticketLifetimeSec = Long.parseLong(v);
          if (ticketLifetimeSec < 30) {
            usage("--ticket-lifetime takes 30 seconds or more");
          }
          break;
        case "--sasl-qop":
          if (!v.equals("auth") && !v.equals("auth-int") && !v.equals("auth-conf")) {
            usage("--sasl-qop is auth, auth-int or auth-conf");
          }
          saslQop = v;
          break;
        case "--spnego":
          spnego = true;
          break;
        case "--https":
          https = true;
          break;
        case "--proxyuser":
          proxyUser = true;
          break;
        case "--ready-timeout":
          readyTimeoutSec = Integer.parseInt(v);
          break;
        case "--help":
        case "-h":
          usage("help");
          break;
        default:
          usage("unknown option " + a);
      }
    }
    if (endpoints.isEmpty()) {
      usage("give at least one --thrift1 or --thrift2");
    }
    if (http && framed) {
      // HBase's HTTP mode has no framing: say so rather than start a
      // server the option does not describe
      usage("--http and --transport framed do not go together (HTTP has no framing)");
    }
    // HBase's own rules, said before a JVM full of stack traces says them
    if (kdcDir == null && (saslQop != null || spnego || proxyUser || ticketLifetimeSec > 0)) {
      usage("--sasl-qop, --spnego, --proxyuser and --ticket-lifetime need --kdc DIR");
    }
    if ((spnego || https || proxyUser) && !http) {
      usage("--spnego, --https and --proxyuser are for the HTTP servers: add --http");
    }
    if (saslQop != null && http) {
      usage("--sasl-qop is the socket servers' SASL; the HTTP servers use --spnego");
    }
    if (https && kdcDir == null && !keepDataDir) {
      usage("--https writes its keystore and CA to --kdc DIR or --data-dir DIR: give one");
    }
  }

  /** A port nothing listens on now, for PORT 0. */
  static int freePort(String host) throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(host, 0));
      return s.getLocalPort();
    }
  }

  Configuration clusterConf() throws IOException {
    Configuration conf = HBaseConfiguration.create();
    File root = new File(dataDir, "hbase");
    conf.set("hbase.rootdir", root.toURI().toString());
    conf.set("hbase.tmp.dir", new File(dataDir, "tmp").getAbsolutePath());
    conf.set("hbase.zookeeper.property.dataDir", new File(dataDir, "zk").getAbsolutePath());
    conf.setBoolean("hbase.cluster.distributed", false);
    conf.set("hbase.zookeeper.quorum", "127.0.0.1");
    // the local file system has no hflush/hsync capability to check, and
    // the async WAL writer needs HDFS: the plain WAL writer on local files
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.set("hbase.wal.provider", "filesystem");
    // every port of the cluster's own picked at random, no web UIs
    conf.setBoolean(LocalHBaseCluster.ASSIGN_RANDOM_PORTS, true);
    conf.setInt("hbase.master.port", 0);
    conf.setInt("hbase.master.info.port", -1);
    conf.setInt("hbase.regionserver.port", 0);
    conf.setInt("hbase.regionserver.info.port", -1);
    conf.setInt("hbase.thrift.info.port", -1);
    // a test cluster on two cores: fewer handler threads, quick shutdown
    conf.setInt("hbase.regionserver.handler.count", 8);
    conf.setInt("hbase.master.handler.count", 8);
    conf.setInt("zookeeper.session.timeout", 20000);
    if (splitSize > 0) {
      // regions split by size, predictably, at test-sized data
      conf.setLong("hbase.hregion.max.filesize", splitSize);
      conf.set(
          "hbase.regionserver.region.split.policy",
          "org.apache.hadoop.hbase.regionserver.ConstantSizeRegionSplitPolicy");
      long flush = Math.max(64 * 1024, splitSize / 4);
      conf.setLong("hbase.hregion.memstore.flush.size", flush);
      // HBase refuses a flush size under 1 MiB unless the sanity checks
      // are off
      conf.setBoolean("hbase.table.sanity.checks", false);
    }
    // the Thrift servers' own keys, read by HBase's ThriftServer
    conf.setBoolean("hbase.regionserver.thrift.compact", compact);
    conf.setBoolean("hbase.regionserver.thrift.framed", framed);
    conf.setBoolean("hbase.regionserver.thrift.http", http);
    if (filters != null) {
      conf.set("hbase.thrift.filters", filters);
    }
    if (kdc != null) {
      Secure.configure(this, conf);
    }
    if (https) {
      Secure.configureTls(this, conf);
    }
    // last, so a test may override any of the above with HBase's own key
    for (String[] kv : confs) {
      conf.set(kv[0], kv[1]);
    }
    return conf;
  }

  void startCluster(Configuration conf) throws Exception {
    if (kdc != null) {
      Secure.login(conf);
    }
    // each region server registers metrics sources of the same names
    // ("RegionServer,sub=Server"): in one JVM the second one's startup
    // fails on "already exists!" and it aborts, leaving one region server
    // whatever --region-servers said.  Mini-cluster mode makes the names
    // unique, as HBase's own test utility does.
    DefaultMetricsSystem.setMiniClusterMode(true);
    zk = new MiniZooKeeperCluster(conf);
    int zkPort = zk.startup(new File(dataDir, "zk"));
    conf.setInt("hbase.zookeeper.property.clientPort", zkPort);
    cluster =
        new LocalHBaseCluster(conf, 1, regionServers, HMaster.class, HRegionServer.class);
    cluster.startup();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(readyTimeoutSec);
    while (true) {
      HMaster m = cluster.getActiveMaster();
      // every region server too: the master initializes once one has
      // checked in, and a table created before the others did gets all its
      // regions on that one (round-robin assignment over the servers
      // online; the balancer moves them minutes later, if ever)
      if (m != null
          && m.isInitialized()
          && m.getServerManager().getOnlineServersList().size() >= regionServers) {
        break;
      }
      if (System.nanoTime() > deadline) {
        throw new IOException(
            "the master and "
                + regionServers
                + " region servers did not come up in "
                + readyTimeoutSec
                + " s");
      }
      Thread.sleep(100);
    }
  }

  void startThrift(Configuration conf) throws Exception {
    if (kdc != null) {
      Secure.grant(this, conf);
    }
    for (Endpoint e : endpoints) {
      if (e.port == 0) {
        e.port = freePort(e.host);
      }
      e.runner = new ThriftRunner(e.kind, e.host, e.port, conf);
      e.runner.start();
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(readyTimeoutSec);
    for (Endpoint e : endpoints) {
      e.runner.awaitAnswer(deadline, compact, framed, http);
    }
  }

  private boolean down;

  /** Stops the Thrift servers, the cluster and ZooKeeper; once. */
  synchronized void shutdown() {
    if (down) {
      return;
    }
    down = true;
    for (Endpoint e : endpoints) {
      if (e.runner != null) {
        e.runner.shutdown();
      }
    }
    if (cluster != null) {
      cluster.shutdown();
      cluster.join();
    }
    if (zk != null) {
      try {
        zk.shutdown();
      } catch (IOException ex) {
        System.err.println("hbase-mini: zookeeper shutdown: " + ex);
      }
    }
    if (kdc != null) {
      kdc.stop();
    }
    if (!keepDataDir && dataDir != null) {
      deleteTree(dataDir.toPath());
    }
  }

  static void deleteTree(Path p) {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      s.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
    } catch (IOException ex) {
      System.err.println("hbase-mini: could not remove " + p + ": " + ex);
    }
  }

  String readyLine() {
    StringBuilder t1 = new StringBuilder();
    StringBuilder t2 = new StringBuilder();
    for (Endpoint e : endpoints) {
      StringBuilder b = e.kind == 1 ? t1 : t2;
      if (b.length() > 0) {
        b.append(',');
      }
      b.append(e.name());
    }
    StringBuilder line = new StringBuilder("ready");
    if (t1.length() > 0) {
      line.append(" thrift1=").append(t1);
    }
    if (t2.length() > 0) {
      line.append(" thrift2=").append(t2);
    }
    return line.toString();
  }

  public static void main(String[] args) throws Exception {
    HBaseMini mini = new HBaseMini();
    mini.parse(args);
    if (mini.dataDir == null) {
      mini.dataDir = Files.createTempDirectory("hbase-mini-").toFile();
    } else if (!mini.dataDir.isDirectory() && !mini.dataDir.mkdirs()) {
      usage("cannot create --data-dir " + mini.dataDir);
    }
    CountDownLatch stop = new CountDownLatch(1);
    // any other exit still stops what did start and removes the data dir
    Runtime.getRuntime().addShutdownHook(new Thread(mini::shutdown, "hbase-mini-hook"));
    // SIGTERM and SIGINT are the way to stop it: a clean shutdown, exit 0
    for (String sig : new String[] {"TERM", "INT"}) {
      Signal.handle(
          new Signal(sig),
          s -> {
            stop.countDown();
            new Thread(
                    () -> {
                      mini.shutdown();
                      System.err.println("hbase-mini: stopped on SIG" + sig);
                      System.exit(0);
                    },
                    "hbase-mini-stop")
                .start();
          });
    }
    long t0 = System.nanoTime();
    try {
      if (mini.kdcDir != null) {
        mini.kdc = new Kdc(mini.kdcDir, mini.ticketLifetimeSec);
        mini.kdc.start();
      }
      Configuration conf = mini.clusterConf();
      mini.startCluster(conf);
      mini.startThrift(conf);
    } catch (Throwable t) {
      System.err.println("hbase-mini: start failed: " + t);
      t.printStackTrace();
      System.out.println("failed " + t);
      System.out.flush();
      // the hook shuts down what did start and removes the data dir
      System.exit(1);
    }
    System.err.printf(
        "hbase-mini: ready in %.1f s, data in %s%n", (System.nanoTime() - t0) / 1e9, mini.dataDir);
    System.out.println(mini.readyLine());
    System.out.flush();
    // runs until SIGTERM/SIGINT; the shutdown hook stops the cluster
    ControlLoop.run(mini, stop);
  }
}
