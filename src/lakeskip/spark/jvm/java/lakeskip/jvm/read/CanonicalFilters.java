package lakeskip.jvm.read;

import java.util.Arrays;
import java.util.Comparator;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;

/**
 * Pushed filters in one order for comparing scans ({@link LakeScan#equals}): the two sides of
 * an {@code And} or an {@code Or} and the values of an {@code In} sorted (by their text, the
 * class of a value first), recursively, also under a {@code Not}; every other filter as it is.
 * Only the order of commutative parts changes, so two filters canonical-equal select the same
 * rows; two that differ in anything else (a column, an operator, a value) stay unequal.
 */
final class CanonicalFilters {
  private CanonicalFilters() {}

  private static final Comparator<Object> ORDER =
      Comparator.comparing((Object v) -> v == null ? "" : v.getClass().getName())
          .thenComparing(String::valueOf);

  /** {@code scan} with its pushed filters canonical, everything else the same. */
  static ParquetScan of(ParquetScan scan) {
    Filter[] pushed = scan.pushedFilters();
    Filter[] same = new Filter[pushed.length];
    for (int i = 0; i < pushed.length; i++) {
      same[i] = of(pushed[i]);
    }
    return new ParquetScan(scan.sparkSession(), scan.hadoopConf(), scan.fileIndex(),
        scan.dataSchema(), scan.readDataSchema(), scan.readPartitionSchema(), same,
        scan.options(), scan.pushedAggregate(), scan.partitionFilters(), scan.dataFilters(),
        scan.pushedVariantExtractions());
  }

  /** {@code f} with its commutative parts in canonical order. */
  static Filter of(Filter f) {
    if (f instanceof And) {
      Filter[] two = sorted(of(((And) f).left()), of(((And) f).right()));
      return new And(two[0], two[1]);
    }
    if (f instanceof Or) {
      Filter[] two = sorted(of(((Or) f).left()), of(((Or) f).right()));
      return new Or(two[0], two[1]);
    }
    if (f instanceof Not) {
      return new Not(of(((Not) f).child()));
    }
    if (f instanceof In) {
      Object[] values = ((In) f).values().clone();
      Arrays.sort(values, ORDER);
      return new In(((In) f).attribute(), values);
    }
    return f;
  }

  private static Filter[] sorted(Filter a, Filter b) {
    Filter[] two = {a, b};
    Arrays.sort(two, ORDER);
    return two;
  }
}
