package hsp;

import java.util.ArrayList;
import java.util.Arrays;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.filter.FilterBase;
import org.apache.hadoop.hbase.filter.ParseFilter;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * A custom filter as a site registers one through hbase.thrift.filters
 * (hbase-mini --filters ValuePass:hsp.ValuePassFilter): keeps the cells
 * whose value starts with its argument, never looking at the row key.
 * The region servers run in hbase-mini's JVM, so the class is on their
 * classpath; HBase ships it to them as its class name and toByteArray,
 * and builds it there with parseFrom.
 *
 * In the filter language: ValuePass('prefix').
 */
public class ValuePassFilter extends FilterBase {
  private final byte[] prefix;

  public ValuePassFilter(byte[] prefix) {
    this.prefix = prefix;
  }

  /** What ParseFilter calls for ValuePass('prefix'). */
  public static Filter createFilterFromArguments(ArrayList<byte[]> args) {
    if (args.size() != 1) {
      throw new IllegalArgumentException("ValuePass takes one argument, not "
          + args.size());
    }
    return new ValuePassFilter(ParseFilter.removeQuotesFromByteArray(args.get(0)));
  }

  @Override
  public ReturnCode filterCell(Cell c) {
    byte[] v = CellUtil.cloneValue(c);
    return Bytes.startsWith(v, prefix) ? ReturnCode.INCLUDE : ReturnCode.SKIP;
  }

  @Override
  public byte[] toByteArray() {
    return prefix.clone();
  }

  /** What the region server calls to build the filter it was sent. */
  public static ValuePassFilter parseFrom(byte[] bytes) {
    return new ValuePassFilter(Arrays.copyOf(bytes, bytes.length));
  }

  @Override
  public String toString() {
    return "ValuePassFilter " + Bytes.toStringBinary(prefix);
  }
}
