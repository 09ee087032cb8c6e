package lakeskip.jvm.read.v1;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import lakeskip.jvm.read.LakeFileIndex;
import lakeskip.jvm.read.LakeScan;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.DynamicPruning;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.planning.PhysicalOperation$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.FileSourceStrategy$;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.Tuple3;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A lakeskip scan of plain Parquet files planned as Spark's V1 file scan ({@code FileScan
 * parquet} over the kept files' {@link LakeFileIndex}), as {@code spark.read.parquet} plans
 * the same files. Where: a plain Parquet scan ({@link LakeScan#v1Candidate}) that Spark hands
 * no runtime filter (no dynamic pruning in its filters: those need the V2 scan's {@code
 * filter}), by {@link #MODE}: {@code unpruned} (default) where the planner kept every file,
 * {@code always}, or {@code never}.
 */
public final class LakeV1Scan {
  /** Which lakeskip scans are planned as V1 file scans: unpruned, always, never. */
  public static final String MODE = "spark.lakeskip.v1-scan";

  /**
   * The most files a scan planned as V1 keeps (default 10,000). Spark's V1 scan lists the
   * files as statuses and makes its splits from them, objects per file, where the V2 scan's
   * splits come straight from the reply's columns ({@link LakeFileIndex#splits}): a larger
   * scan stays V2 so that its planning keeps that (measured in bench/README.md).
   */
  public static final String MAX_FILES = "spark.lakeskip.v1-scan.max-files";

  private LakeV1Scan() {}

  /** The V1 plan of {@code plan} (a project / filter over a lakeskip scan), or null. */
  public static SparkPlan plan(LogicalPlan plan) {
    if (!(plan instanceof Project || plan instanceof Filter
        || plan instanceof DataSourceV2ScanRelation)) {
      return null;
    }
    Option<Tuple3<scala.collection.immutable.Seq<NamedExpression>,
        scala.collection.immutable.Seq<Expression>, LogicalPlan>> op =
        PhysicalOperation$.MODULE$.unapply(plan);
    if (op.isEmpty() || !(op.get()._3() instanceof DataSourceV2ScanRelation)) {
      return null;
    }
    DataSourceV2ScanRelation rel = (DataSourceV2ScanRelation) op.get()._3();
    if (!(rel.scan() instanceof LakeScan)) {
      return null;
    }
    String mode = SQLConf.get().getConfString(MODE, "unpruned").toLowerCase(Locale.ROOT);
    if (mode.equals("never")) {
      return null;
    }
    if (!mode.equals("unpruned") && !mode.equals("always")) {
      throw new IllegalArgumentException(
          MODE + ": '" + mode + "' is not one of unpruned, always, never");
    }
    ParquetScan parquet = ((LakeScan) rel.scan()).v1Candidate(!mode.equals("always"));
    String maxText = SQLConf.get().getConfString(MAX_FILES, "10000").trim();
    long most;
    try {
      most = Long.parseLong(maxText);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          MAX_FILES + ": '" + maxText + "' is not a number of files");
    }
    if (parquet == null || ((LakeFileIndex) parquet.fileIndex()).fileCount() > most) {
      return null;
    }
    List<Expression> filters = new ArrayList<>(CollectionConverters.asJava(op.get()._2()));
    for (Expression f : filters) {
      if (f.exists(new scala.runtime.AbstractFunction1<Expression, Object>() {
        @Override
        public Object apply(Expression e) {
          return e instanceof DynamicPruning;
        }
      })) {
        return null;
      }
    }
    filters.addAll(CollectionConverters.asJava(parquet.partitionFilters()));
    // every column of the relation's schema as an attribute: the scan's own, those its
    // partition filters read, a new one for the rest (Spark prunes them)
    Map<String, AttributeReference> known = new HashMap<>();
    for (Attribute a : CollectionConverters.asJava(rel.output())) {
      if (!(a instanceof AttributeReference)) {
        return null;
      }
      known.put(a.name().toLowerCase(Locale.ROOT), (AttributeReference) a);
    }
    for (Expression f : filters) {
      for (Attribute a : CollectionConverters.asJava(f.references().toSeq())) {
        if (a instanceof AttributeReference) {
          known.putIfAbsent(a.name().toLowerCase(Locale.ROOT), (AttributeReference) a);
        }
      }
    }
    StructType dataSchema = parquet.dataSchema();
    StructType partitionSchema = parquet.fileIndex().partitionSchema();
    HadoopFsRelation fs = new HadoopFsRelation(parquet.fileIndex(), partitionSchema, dataSchema,
        Option.empty(), new ParquetFileFormat(),
        scala.collection.immutable.Map$.MODULE$.from(
            CollectionConverters.asScala(parquet.options().asCaseSensitiveMap())),
        parquet.sparkSession());
    List<AttributeReference> output = new ArrayList<>();
    int matched = 0;
    for (StructField f : fs.schema().fields()) {
      AttributeReference a = known.get(f.name().toLowerCase(Locale.ROOT));
      if (a != null) {
        matched++;
      } else {
        a = new AttributeReference(f.name(), f.dataType(), f.nullable(), f.metadata(),
            NamedExpression$.MODULE$.newExprId(),
            CollectionConverters.asScala(new ArrayList<String>()).toList());
      }
      output.add(a);
    }
    if (matched < rel.output().size()) {
      return null; // a column the schema lacks (a metadata column): the V2 scan's
    }
    LogicalPlan leaf = new LogicalRelation(fs, CollectionConverters.asScala(output).toList(),
        Option.empty(), false, Option.empty());
    if (!filters.isEmpty()) {
      Expression cond = filters.get(0);
      for (int i = 1; i < filters.size(); i++) {
        cond = new And(cond, filters.get(i));
      }
      leaf = new Filter(cond, leaf);
    }
    LogicalPlan top = new Project(op.get()._1(), leaf);
    scala.collection.immutable.Seq<SparkPlan> planned = FileSourceStrategy$.MODULE$.apply(top);
    if (planned.isEmpty()) {
      return null;
    }
    LakeScan scan = (LakeScan) rel.scan();
    return wrapped(planned.head(), scan);
  }

  /**
   * {@code plan} with its file scan under a {@link LakeV1ScanExec}, or null where that scan
   * is not columnar (Spark would read it row by row inside its generated code, which the
   * wrapper would leave: the V2 scan is planned instead).
   */
  private static SparkPlan wrapped(SparkPlan plan, LakeScan scan) {
    if (plan instanceof FileSourceScanExec) {
      return plan.supportsColumnar() ? new LakeV1ScanExec(plan, scan, scan.tableName()) : null;
    }
    List<SparkPlan> kids = new ArrayList<>();
    for (SparkPlan c : CollectionConverters.asJava(plan.children())) {
      SparkPlan w = wrapped(c, scan);
      if (w == null) {
        return null;
      }
      kids.add(w);
    }
    return plan.withNewChildren(CollectionConverters.asScala(kids).toList());
  }
}
