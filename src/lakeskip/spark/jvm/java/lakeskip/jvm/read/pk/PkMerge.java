package lakeskip.jvm.read.pk;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import lakeskip.jvm.bridge.Protocol.Key;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BaseOrdering;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.RowOrdering$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * How the versions of one primary-key become its row, in Java: the rules of
 * {@code lakeskip.catalog.pk.merge_engine} and {@code lakeskip.catalog.pk.aggregation} (the Python
 * copy; both are tested against tests/cases/pk_merge_cases.json). Versions are ordered oldest
 * first by the sequence fields (NULL oldest, ascending or descending), then {@code
 * _SEQUENCE_NUMBER}; then deduplicate takes the newest, partial-update each column's newest
 * non-null value, aggregation folds each column with its function ({@link FieldAgg}). The error
 * texts come from Python with the rest of the rule ({@code errors}).
 */
final class PkMerge implements Serializable {
  private static final long serialVersionUID = 1L;

  private final String engine;
  private final boolean ignoreDelete;
  private final boolean removeRecordOnDelete;
  /** Keep {@code -U}/{@code -D} winners (Paimon's forceKeepDelete: t$audit_log). */
  private final boolean keepDelete;
  private final int sequence;
  private final int kind;
  private final int[] out;
  private final DataType[] outTypes;
  private final int[] seqFields;
  private final DataType[] seqTypes;
  private final boolean seqDescending;
  private final FieldAgg[] aggs;
  private final Map<String, String> errors;
  private final Group[] groups;
  private transient Comparator<InternalRow> order;

  /**
   * A partial-update sequence group: its sequence columns (ordinals in the file rows) and the
   * output positions it sets (its columns and its sequence columns, where projected).
   */
  static final class Group implements Serializable {
    private static final long serialVersionUID = 1L;
    final int[] seq;
    final DataType[] seqTypes;
    final int[] outValues;
    final int[] outSeq;
    private transient BaseOrdering[] one;

    Group(int[] seq, DataType[] seqTypes, int[] outValues, int[] outSeq) {
      this.seq = seq;
      this.seqTypes = seqTypes;
      this.outValues = outValues;
      this.outSeq = outSeq;
    }

    /** The version's group sequence against the row's (NULL smallest); null: all NULL. */
    Integer compare(InternalRow v, Object[] current) {
      if (one == null) {
        one = new BaseOrdering[seq.length];
        for (int i = 0; i < seq.length; i++) {
          one[i] = naturalOrdering(seqTypes[i]);
        }
      }
      boolean empty = true;
      int result = 0;
      for (int i = 0; i < seq.length; i++) {
        Object a = v.isNullAt(seq[i]) ? null : v.get(seq[i], seqTypes[i]);
        empty &= a == null;
        if (result != 0) {
          continue;
        }
        Object b = current[i];
        if (a == null || b == null) {
          result = a == null ? (b == null ? 0 : -1) : 1;
        } else {
          result =
              one[i].compare(
                  new GenericInternalRow(new Object[] {a}), new GenericInternalRow(new Object[] {b}));
        }
      }
      return empty ? null : result;
    }
  }

  PkMerge(
      String engine, boolean ignoreDelete, boolean removeRecordOnDelete, boolean keepDelete,
      int sequence, int kind, int[] out, DataType[] outTypes, int[] seqFields,
      DataType[] seqTypes, boolean seqDescending, FieldAgg[] aggs, Map<String, String> errors,
      Group[] groups) {
    this.groups = groups;
    this.engine = engine;
    this.ignoreDelete = ignoreDelete;
    this.removeRecordOnDelete = removeRecordOnDelete;
    this.keepDelete = keepDelete;
    this.sequence = sequence;
    this.kind = kind;
    this.out = out;
    this.outTypes = outTypes;
    this.seqFields = seqFields;
    this.seqTypes = seqTypes;
    this.seqDescending = seqDescending;
    this.aggs = aggs;
    this.errors = new java.util.HashMap<>(errors);
  }

  /**
   * The rule Python sent ({@code merge}: {@code MergeEngine.to_json}) over versions read as
   * {@code got} (with {@code _SEQUENCE_NUMBER} and {@code _VALUE_KIND}), giving rows of
   * {@code out}; {@code keepDelete}: t$audit_log's keep-delete merge.
   */
  static PkMerge of(JsonNode merge, StructType got, StructType out, boolean keepDelete) {
    List<String> seqFields = new ArrayList<>();
    for (JsonNode s : merge.path(Key.SEQUENCE_FIELDS)) {
      seqFields.add(s.asText());
    }
    int[] outOrdinals = new int[out.fields().length];
    DataType[] outTypes = new DataType[outOrdinals.length];
    for (int i = 0; i < outOrdinals.length; i++) {
      outOrdinals[i] = got.fieldIndex(out.fields()[i].name());
      outTypes[i] = out.fields()[i].dataType();
    }
    int[] seqOrdinals = new int[seqFields.size()];
    DataType[] seqTypes = new DataType[seqFields.size()];
    for (int i = 0; i < seqOrdinals.length; i++) {
      seqOrdinals[i] = got.fieldIndex(seqFields.get(i));
      seqTypes[i] = got.fields()[seqOrdinals[i]].dataType();
    }
    FieldAgg[] aggs = new FieldAgg[outOrdinals.length];
    for (int i = 0; i < aggs.length; i++) {
      JsonNode a = merge.path(Key.AGGREGATES).path(out.fields()[i].name());
      if (!a.isMissingNode() && !"primary-key".equals(a.path(Key.FUNCTION).asText())) {
        aggs[i] =
            new FieldAgg(
                a.path(Key.FUNCTION).asText(), out.fields()[i].name(), outTypes[i],
                a.path(Key.IGNORE_RETRACT).asBoolean(false), a.path(Key.DELIMITER).asText(","));
      }
    }
    List<String> outNames = java.util.Arrays.asList(out.fieldNames());
    List<Group> seqGroups = new ArrayList<>();
    for (JsonNode g : merge.path(Key.SEQUENCE_GROUPS)) {
      List<Integer> seqOrd = new ArrayList<>();
      List<DataType> seqTy = new ArrayList<>();
      List<Integer> outSeq = new ArrayList<>();
      for (JsonNode s : g.path(Key.SEQUENCE)) {
        int o = got.fieldIndex(s.asText());
        seqOrd.add(o);
        seqTy.add(got.fields()[o].dataType());
        if (outNames.contains(s.asText())) {
          outSeq.add(outNames.indexOf(s.asText()));
        }
      }
      List<Integer> outValues = new ArrayList<>();
      for (JsonNode f : g.path(Key.FIELDS)) {
        if (outNames.contains(f.asText()) && !outSeq.contains(outNames.indexOf(f.asText()))) {
          outValues.add(outNames.indexOf(f.asText()));
        }
      }
      seqGroups.add(
          new Group(
              seqOrd.stream().mapToInt(Integer::intValue).toArray(),
              seqTy.toArray(new DataType[0]),
              outValues.stream().mapToInt(Integer::intValue).toArray(),
              outSeq.stream().mapToInt(Integer::intValue).toArray()));
    }
    Map<String, String> errors = new java.util.HashMap<>();
    merge.path(Key.ERRORS).fields().forEachRemaining(e -> errors.put(e.getKey(), e.getValue().asText()));
    return new PkMerge(
            merge.path(Key.ENGINE).asText("deduplicate"),
            merge.path(Key.IGNORE_DELETE).asBoolean(false),
            merge.path(Key.REMOVE_RECORD_ON_DELETE).asBoolean(false),
            keepDelete, got.fieldIndex(LakePkScan.SEQUENCE), got.fieldIndex(LakePkScan.KIND), outOrdinals, outTypes,
            seqOrdinals, seqTypes, merge.path(Key.SEQUENCE_DESCENDING).asBoolean(false), aggs,
            errors, seqGroups.toArray(new Group[0]));
  }

  private static boolean isAdd(byte kind) {
    return kind == 0 || kind == 2; // +I, +U
  }

  /** The versions' order, oldest first (Paimon's UserDefinedSeqComparator, then seq). */
  private Comparator<InternalRow> order() {
    if (order == null) {
      BaseOrdering[] one = new BaseOrdering[seqFields.length];
      for (int i = 0; i < one.length; i++) {
        one[i] = naturalOrdering(seqTypes[i]);
      }
      order =
          (a, b) -> {
            for (int i = 0; i < seqFields.length; i++) {
              boolean na = a.isNullAt(seqFields[i]);
              boolean nb = b.isNullAt(seqFields[i]);
              if (na || nb) {
                if (na != nb) {
                  return na ? -1 : 1; // NULL is oldest, ascending or not
                }
                continue;
              }
              int c =
                  one[i].compare(
                      new GenericInternalRow(new Object[] {a.get(seqFields[i], seqTypes[i])}),
                      new GenericInternalRow(new Object[] {b.get(seqFields[i], seqTypes[i])}));
              if (c != 0) {
                return seqDescending ? -c : c;
              }
            }
            return Long.compare(a.getLong(sequence), b.getLong(sequence));
          };
    }
    return order;
  }

  static BaseOrdering naturalOrdering(DataType t) {
    return RowOrdering$.MODULE$.createNaturalAscendingOrdering(
        CollectionConverters.asScala(Arrays.asList(t)).toList());
  }

  /** The key's row (null: none) from its versions (files' rows, any order). */
  InternalRow merge(List<InternalRow> versions) throws IOException {
    versions.sort(order());
    InternalRow last = versions.get(versions.size() - 1);
    switch (engine) {
      case "partial-update":
        if (groups.length > 0 && versions.size() == 1) {
          break; // a lone version stays as it is (ReducerMergeFunctionWrapper)
        }
        return partialUpdate(versions);
      case "aggregation":
        if (versions.size() > 1) {
          return aggregate(versions);
        }
        break;
      default:
        break;
    }
    return isAdd(last.getByte(kind)) || keepDelete ? project(last) : null;
  }

  private InternalRow project(InternalRow v) {
    Object[] values = new Object[out.length];
    copyAll(v, values);
    return new GenericInternalRow(values);
  }

  private void copyAll(InternalRow v, Object[] values) {
    for (int i = 0; i < values.length; i++) {
      values[i] = v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
    }
  }

  /**
   * Paimon's {@code PartialUpdateMergeFunction} without sequence groups or aggregation:
   * versions oldest first; +I/+U set their non-null columns; a retract version first seeds the
   * row with its values; a -D resets the row to its values when remove-record-on-delete (and,
   * newest, means no row); retracts are skipped with ignore-delete and are an error otherwise.
   * Null: no row.
   */
  private InternalRow partialUpdate(List<InternalRow> versions) throws IOException {
    if (groups.length > 0) {
      return groupedUpdate(versions);
    }
    Object[] values = new Object[out.length];
    boolean filled = false;
    boolean meetInsert = false;
    boolean deleted = false;
    for (InternalRow v : versions) {
      byte k = v.getByte(kind);
      deleted = false;
      if (!isAdd(k)) {
        if (!filled) {
          copyAll(v, values);
          filled = true;
        }
        if (ignoreDelete) {
          continue;
        }
        if (removeRecordOnDelete) {
          if (k == 3) {
            deleted = true;
            copyAll(v, values);
          }
          continue;
        }
        throw new IOException("lakeskip: " + errors.get(Key.PARTIAL_UPDATE_RETRACT));
      }
      for (int i = 0; i < values.length; i++) {
        if (!v.isNullAt(out[i])) {
          values[i] = v.get(out[i], outTypes[i]);
        }
      }
      meetInsert = true;
      filled = true;
    }
    return deleted || !meetInsert ? null : new GenericInternalRow(values);
  }

  /**
   * Partial-update with sequence groups (lakeskip.catalog.pk.merge_engine's {@code _grouped}):
   * a version whose group sequence is not all NULL and not older than the row's sets the whole
   * group, NULLs included (a retract sets the sequence columns and clears the others); other
   * columns take the newest non-null value; a key with no +I/+U version has no row.
   */
  private InternalRow groupedUpdate(List<InternalRow> versions) {
    Object[] values = new Object[out.length];
    boolean[] grouped = new boolean[out.length];
    Object[][] current = new Object[groups.length][];
    for (int g = 0; g < groups.length; g++) {
      current[g] = new Object[groups[g].seq.length];
      for (int i : groups[g].outValues) {
        grouped[i] = true;
      }
      for (int i : groups[g].outSeq) {
        grouped[i] = true;
      }
    }
    boolean meetInsert = false;
    for (InternalRow v : versions) {
      boolean retract = !isAdd(v.getByte(kind));
      if (retract && ignoreDelete) {
        continue;
      }
      if (!retract) {
        meetInsert = true;
        for (int i = 0; i < values.length; i++) {
          if (!grouped[i] && !v.isNullAt(out[i])) {
            values[i] = v.get(out[i], outTypes[i]);
          }
        }
      }
      for (int g = 0; g < groups.length; g++) {
        Group group = groups[g];
        Integer c = group.compare(v, current[g]);
        if (c == null || c < 0) {
          continue;
        }
        for (int i : group.outValues) {
          values[i] = retract || v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
        }
        for (int j = 0; j < group.seq.length; j++) {
          current[g][j] = v.isNullAt(group.seq[j]) ? null : v.get(group.seq[j], group.seqTypes[j]);
        }
        for (int i : group.outSeq) {
          values[i] = v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
        }
      }
    }
    return meetInsert ? new GenericInternalRow(values) : null;
  }

  /** Paimon's {@code AggregateMergeFunction} over two or more versions: always a +I row. */
  private InternalRow aggregate(List<InternalRow> versions) throws IOException {
    Object[] values = new Object[out.length];
    boolean[] retract = new boolean[versions.size()];
    for (int j = 0; j < retract.length; j++) {
      retract[j] = !isAdd(versions.get(j).getByte(kind));
    }
    for (int i = 0; i < out.length; i++) {
      if (aggs[i] == null) { // a key column (or the kind of t$audit_log): the newest input
        InternalRow last = versions.get(versions.size() - 1);
        values[i] = last.isNullAt(out[i]) ? null : last.get(out[i], outTypes[i]);
        if (keepDelete && out[i] == kind) {
          values[i] = (byte) 0;
        }
        continue;
      }
      Object[] in = new Object[versions.size()];
      for (int j = 0; j < in.length; j++) {
        InternalRow v = versions.get(j);
        in[j] = v.isNullAt(out[i]) ? null : v.get(out[i], outTypes[i]);
      }
      values[i] = aggs[i].fold(in, retract, errors);
    }
    return new GenericInternalRow(values);
  }
}
