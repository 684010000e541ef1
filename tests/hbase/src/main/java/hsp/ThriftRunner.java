// One of HBase's own Thrift servers (Thrift1 or Thrift2) on its own thread,
// and the call that proves it answers.
package hsp;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.thrift.generated.Hbase;
import org.apache.hadoop.hbase.thrift2.generated.THBaseService;
import org.apache.hadoop.hbase.thrift2.generated.TTableName;
import org.apache.thrift.TConfiguration;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TCompactProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.transport.THttpClient;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.layered.TFramedTransport;

final class ThriftRunner {
  final int kind;
  final String host;
  final int port;
  final Configuration base;
  volatile org.apache.hadoop.hbase.thrift.ThriftServer server;
  volatile Throwable failure;
  Thread thread;

  ThriftRunner(int kind, String host, int port, Configuration base) {
    this.kind = kind;
    this.host = host;
    this.port = port;
    this.base = base;
  }

  String name() {
    return "thrift" + kind + " " + host + ":" + port;
  }

  /** Starts the server; it serves on its thread until shutdown(). */
  synchronized void start() {
    Configuration conf = new Configuration(base);
    conf.setInt("hbase.regionserver.thrift.port", port);
    conf.set("hbase.regionserver.thrift.ipaddress", host);
    server =
        kind == 1
            ? new org.apache.hadoop.hbase.thrift.ThriftServer(conf)
            : new org.apache.hadoop.hbase.thrift2.ThriftServer(conf);
    failure = null;
    final org.apache.hadoop.hbase.thrift.ThriftServer s = server;
    thread =
        new Thread(
            () -> {
              try {
                s.run(null);
              } catch (Throwable t) {
                failure = t;
                System.err.println("hbase-mini: " + name() + " stopped: " + t);
              }
            },
            "hbase-mini-" + name());
    thread.setDaemon(true);
    thread.start();
  }

  /** Stops the server; its open scanners are gone, as a real server's. */
  synchronized void shutdown() {
    if (server != null) {
      server.stop();
      server = null;
    }
    if (thread != null) {
      try {
        thread.join(10000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      thread = null;
    }
  }

  /** The port accepts connections and the server has not failed. */
  void awaitListening(long deadlineNanos) throws Exception {
    Exception last = null;
    while (System.nanoTime() < deadlineNanos) {
      if (failure != null) {
        throw new Exception(name() + " failed to start: " + failure, failure);
      }
      try (java.net.Socket s = new java.net.Socket()) {
        s.connect(new java.net.InetSocketAddress(host, port), 5000);
        return;
      } catch (java.io.IOException e) {
        last = e;
        Thread.sleep(200);
      }
    }
    throw new Exception(name() + " did not listen: " + last, last);
  }

  /** One real call, repeated until it is answered or the deadline passes. */
  void awaitAnswer(long deadlineNanos, boolean compact, boolean framed, boolean http)
      throws Exception {
    if (base.getBoolean("hbase.thrift.ssl.enabled", false)
        || "kerberos".equals(base.get("hbase.security.authentication"))) {
      // a call would need Kerberos or the test CA: a listening port and a
      // server thread still running say as much for a secured server
      awaitListening(deadlineNanos);
      return;
    }
    Exception last = null;
    while (System.nanoTime() < deadlineNanos) {
      if (failure != null) {
        throw new Exception(name() + " failed to start: " + failure, failure);
      }
      TTransport t = null;
      try {
        if (http) {
          t = new THttpClient("http://" + host + ":" + port + "/");
        } else {
          t = new TSocket(new TConfiguration(), host, port, 5000);
          if (framed) {
            t = new TFramedTransport(t);
          }
        }
        t.open();
        TProtocol p = compact ? new TCompactProtocol(t) : new TBinaryProtocol(t);
        if (kind == 1) {
          new Hbase.Client(p).getTableNames();
        } else {
          TTableName meta = new TTableName();
          meta.setNs(ByteBuffer.wrap("hbase".getBytes(StandardCharsets.UTF_8)));
          meta.setQualifier(ByteBuffer.wrap("meta".getBytes(StandardCharsets.UTF_8)));
          new THBaseService.Client(p).tableExists(meta);
        }
        return;
      } catch (Exception e) {
        last = e;
        Thread.sleep(200);
      } finally {
        if (t != null) {
          t.close();
        }
      }
    }
    throw new Exception(name() + " did not answer: " + last, last);
  }
}
