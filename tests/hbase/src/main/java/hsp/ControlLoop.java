// hbase-mini's standard input: commands that stop and start one Thrift
// server while the cluster runs, for the fault tests.  End of input just
// waits for SIGTERM/SIGINT.
package hsp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

final class ControlLoop {
  private ControlLoop() {}

  /**
   * "stop HOST:PORT" stops that Thrift server (its scanners are lost),
   * "start HOST:PORT" starts it again on the same port; each answers one
   * line, "ok ..." or "error ...".
   */
  static void run(HBaseMini mini, CountDownLatch stop) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] w = line.trim().split("\\s+");
      if (w.length != 2 || !(w[0].equals("stop") || w[0].equals("start"))) {
        System.out.println("error: commands are 'stop HOST:PORT' and 'start HOST:PORT'");
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
}
