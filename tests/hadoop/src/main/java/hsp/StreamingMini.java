package hsp;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.streaming.StreamJob;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * One Hadoop Streaming job on a MiniMRYarnCluster (a ResourceManager, one
 * NodeManager and the job history server in this JVM; the job's
 * ApplicationMaster and every map task in JVMs of their own, as on a real
 * cluster) over the local file system: one line of the input per map task
 * (NLineInputFormat), no reducers.  The NodeManager's memory is sized so
 * that exactly --slots map tasks run at once next to the ApplicationMaster.
 *
 * <pre>
 * hsp.StreamingMini --work DIR --input FILE --output DIR --mapper CMD
 *     [--slots N] [--map-attempts N] [--cmdenv K=V]... [-D K=V]...
 * </pre>
 *
 * Prints "job ok seconds=S maps=N" or "job failed ..." and exits with the
 * job's status (0 when every map task succeeded in one of its attempts).
 */
public final class StreamingMini {
  // the module openings Hadoop 2.10's task and ApplicationMaster JVMs need
  // on Java 17 (Guice's class generation in the AM's web app, reflection)
  static final String OPENS =
      "--add-opens=java.base/java.lang=ALL-UNNAMED"
          + " --add-opens=java.base/java.lang.reflect=ALL-UNNAMED"
          + " --add-opens=java.base/java.util=ALL-UNNAMED"
          + " --add-opens=java.base/java.io=ALL-UNNAMED"
          + " --add-opens=java.base/java.net=ALL-UNNAMED"
          + " --add-opens=java.base/java.nio=ALL-UNNAMED"
          + " --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
          + " -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k"
          + " -Djava.net.preferIPv4Stack=true";
  static final int AM_MB = 384;
  static final int MAP_MB = 256;

  private StreamingMini() {}

  static void usage(String why) {
    System.err.println("hadoop-mini: " + why);
    System.err.println(
        "usage: hadoop-mini --work DIR --input FILE --output DIR --mapper CMD"
            + " [--slots N] [--map-attempts N] [--cmdenv K=V]... [-D K=V]...");
    System.exit(2);
  }

  public static void main(String[] argv) throws Exception {
    String work = null;
    String input = null;
    String output = null;
    String mapper = null;
    int slots = 1;
    int attempts = 4;
    List<String> cmdenv = new ArrayList<>();
    List<String> defs = new ArrayList<>();
    for (int i = 0; i < argv.length; i++) {
      String a = argv[i];
      if (i + 1 >= argv.length) {
        usage("option " + a + " needs a value");
      }
      String v = argv[++i];
      switch (a) {
        case "--work":
          work = v;
          break;
        case "--input":
          input = v;
          break;
        case "--output":
          output = v;
          break;
        case "--mapper":
          mapper = v;
          break;
        case "--slots":
          slots = Integer.parseInt(v);
          if (slots < 1 || slots > 64) {
            usage("--slots must be 1..64");
          }
          break;
        case "--map-attempts":
          attempts = Integer.parseInt(v);
          break;
        case "--cmdenv":
          cmdenv.add(v);
          break;
        case "-D":
          defs.add(v);
          break;
        default:
          usage("unknown option " + a);
      }
    }
    if (work == null || input == null || output == null || mapper == null) {
      usage("--work, --input, --output and --mapper are required");
    }
    File workDir = new File(work).getAbsoluteFile();
    workDir.mkdirs();
    // MiniYARNCluster keeps its directories under target/ of the working
    // directory: the launcher starts this JVM in --work
    Configuration conf = new YarnConfiguration();
    conf.set("fs.defaultFS", "file:///");
    conf.set("hadoop.tmp.dir", new File(workDir, "tmp").getPath());
    // exactly `slots` map containers beside the ApplicationMaster: memory
    // is what the CapacityScheduler counts
    conf.setInt("yarn.scheduler.minimum-allocation-mb", 128);
    conf.setInt("yarn.nodemanager.resource.memory-mb", AM_MB + slots * MAP_MB);
    conf.setInt("yarn.nodemanager.resource.cpu-vcores", slots + 1);
    conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 1.0f);
    conf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
    conf.setBoolean("yarn.nodemanager.pmem-check-enabled", false);
    conf.setInt("yarn.app.mapreduce.am.resource.mb", AM_MB);
    conf.set("yarn.app.mapreduce.am.command-opts", "-Xmx256m " + OPENS);
    conf.setInt("mapreduce.map.memory.mb", MAP_MB);
    conf.set("mapreduce.map.java.opts", "-Xmx160m " + OPENS);
    // the history server's web app and the timeline are of no use here
    conf.setBoolean("yarn.timeline-service.enabled", false);

    MiniMRYarnCluster mr = new MiniMRYarnCluster("hadoop-mini", 1);
    mr.init(conf);
    mr.start();
    int rc;
    long t0 = System.nanoTime();
    try {
      Configuration jc = new Configuration(mr.getConfig());
      List<String> s = new ArrayList<>();
      // generic options (-D) first, as ToolRunner's parser wants them
      s.add("-D");
      s.add("mapreduce.job.reduces=0");
      // one unit (one line) per map task
      s.add("-D");
      s.add("mapreduce.input.lineinputformat.linespermap=1");
      // the mapper's stdin is the line alone, not "offset<TAB>line"
      s.add("-D");
      s.add("stream.map.input.ignoreKey=true");
      s.add("-D");
      s.add("mapreduce.map.maxattempts=" + attempts);
      // the slots: the ApplicationMaster runs at most this many map tasks
      // at once (the NodeManager's memory alone does not hold them to it
      // in a MiniYARNCluster)
      s.add("-D");
      s.add("mapreduce.job.running.map.limit=" + slots);
      // a second attempt of a slow unit would copy it twice at once
      s.add("-D");
      s.add("mapreduce.map.speculative=false");
      for (String d : defs) {
        s.add("-D");
        s.add(d);
      }
      s.add("-input");
      s.add(new File(input).getAbsoluteFile().toURI().toString());
      s.add("-output");
      s.add(new File(output).getAbsoluteFile().toURI().toString());
      s.add("-inputformat");
      s.add("org.apache.hadoop.mapred.lib.NLineInputFormat");
      s.add("-mapper");
      s.add(mapper);
      s.add("-numReduceTasks");
      s.add("0");
      for (String e : cmdenv) {
        s.add("-cmdenv");
        s.add(e);
      }
      rc = ToolRunner.run(jc, new StreamJob(), s.toArray(new String[0]));
    } finally {
      double secs = (System.nanoTime() - t0) / 1e9;
      System.out.flush();
      mr.stop();
      System.err.flush();
      System.out.printf("job %s seconds=%.1f%n", "done", secs);
    }
    System.out.println(rc == 0 ? "job ok" : "job failed status=" + rc);
    System.out.flush();
    System.exit(rc);
  }
}
