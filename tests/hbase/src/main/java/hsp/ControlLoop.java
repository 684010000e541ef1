// hbase-mini's standard input: commands that stop and start one Thrift
// server while the cluster runs, for the fault tests, and one that reports
// a table's per-region request counts, for the benchmarks.  End of input
// just waits for SIGTERM/SIGINT.
package hsp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.JVMClusterUtil;

final class ControlLoop {
  private ControlLoop() {}

  /**
   * "stop HOST:PORT" stops that Thrift server (its scanners are lost),
   * "start HOST:PORT" starts it again on the same port, "regions TABLE"
   * reports that table's regions (regions()); each answers one line,
   * "ok ..." or "error ...".
   */
  static void run(HBaseMini mini, CountDownLatch stop) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] w = line.trim().split("\\s+");
      if (w.length == 2 && w[0].equals("regions")) {
        System.out.println(regions(mini, w[1]));
        System.out.flush();
        continue;
      }
      if (w.length == 2 && w[0].equals("rekey")) {
        System.out.println(rekey(mini, w[1]));
        System.out.flush();
        continue;
      }
      if (w.length != 2 || !(w[0].equals("stop") || w[0].equals("start"))) {
        System.out.println(
            "error: commands are 'stop HOST:PORT', 'start HOST:PORT', 'regions TABLE'"
                + " and 'rekey NAME'");
        System.out.flush();
        continue;
      }
      HBaseMini.Endpoint found = null;
      for (HBaseMini.Endpoint e : mini.endpoints) {
        if (e.name().equals(w[1])) {
          found = e;
        }
      }
      if (found == null) {
        System.out.println("error: no Thrift server on " + w[1]);
      } else if (w[0].equals("stop")) {
        found.runner.shutdown();
        System.out.println("ok stopped " + w[1]);
      } else {
        try {
          found.runner.start();
          found.runner.awaitAnswer(
              System.nanoTime() + TimeUnit.SECONDS.toNanos(60),
              mini.compact,
              mini.framed,
              mini.http);
          System.out.println("ok started " + w[1]);
        } catch (Exception ex) {
          System.out.println("error: " + ex);
        }
      }
      System.out.flush();
    }
    stop.await();
  }

  /** "ok rekey NAME FILE": NAME's keys are new, FILE holds them. */
  static String rekey(HBaseMini mini, String name) {
    if (mini.kdc == null) {
      return "error: rekey needs --kdc";
    }
    try {
      return "ok rekey " + name + " " + mini.kdc.rekey(name).getAbsolutePath();
    } catch (Exception ex) {
      return "error: " + ex;
    }
  }

  /**
   * "ok regions TABLE N START:RS:READS:WRITES ...": the table's regions
   * open now on the live region servers, sorted by start key (hex, "-" for
   * the first region), each with the index of its region server and
   * HBase's own counters of the region, HRegion's read and write request
   * counts (a multi-row call counts each row).  The counters live in the
   * open region: a region that moves or splits starts again from 0.
   */
  static String regions(HBaseMini mini, String table) {
    TableName name;
    try {
      name = TableName.valueOf(table);
    } catch (IllegalArgumentException ex) {
      return "error: bad table name " + table;
    }
    List<String[]> found = new ArrayList<>();
    List<JVMClusterUtil.RegionServerThread> servers = mini.cluster.getRegionServers();
    for (int i = 0; i < servers.size(); i++) {
      if (!servers.get(i).isAlive()) {
        continue;
      }
      HRegionServer rs = servers.get(i).getRegionServer();
      for (HRegion r : rs.getRegions(name)) {
        byte[] start = r.getRegionInfo().getStartKey();
        String hex = Bytes.toHex(start);
        found.add(
            new String[] {
              hex,
              (start.length == 0 ? "-" : hex) + ":" + i + ":" + r.getReadRequestsCount() + ":" + r.getWriteRequestsCount()
            });
      }
    }
    // lower-case hex of the bytes sorts as the bytes do, "" first
    found.sort((a, b) -> a[0].compareTo(b[0]));
    StringBuilder out = new StringBuilder("ok regions " + table + " " + found.size());
    for (String[] f : found) {
      out.append(' ').append(f[1]);
    }
    return out.toString();
  }
}
