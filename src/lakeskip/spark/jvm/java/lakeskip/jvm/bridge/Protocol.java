// Generated from lakeskip/spark/jvm/protocol.py by `python -m lakeskip.spark.jvm.protocol_java`: do not edit.
package lakeskip.jvm.bridge;

/**
 * The Python–JVM protocol's constants: operations, JSON keys, error kinds, the version
 * and shared property names. Every other class uses these, never a literal; the types
 * of each operation's JSON are in {@code lakeskip.spark.jvm.protocol}.
 */
public final class Protocol {
  private Protocol() {}

  /** Version of the JSON protocol; Python checks it on every callback. */
  public static final int VERSION = 4;

  /** Spark local property correlating callbacks with the query's Python thread. */
  public static final String TAG_PROPERTY = "lakeskip.query.tag";

  /** Operation names ({@link PythonBridge#call}). */
  public static final class Op {
    private Op() {}

    public static final String TABLE_EXISTS = "table_exists";
    public static final String LOAD_TABLE = "load_table";
    public static final String CREATE_TABLE = "create_table";
    public static final String ALTER_TABLE = "alter_table";
    public static final String DROP_TABLE = "drop_table";
    public static final String LIST_TABLES = "list_tables";
    public static final String LIST_NAMESPACES = "list_namespaces";
    public static final String NAMESPACE_EXISTS = "namespace_exists";
    public static final String CREATE_NAMESPACE = "create_namespace";
    public static final String DROP_NAMESPACE = "drop_namespace";
    public static final String STAGE_TABLE = "stage_table";
    public static final String COMMIT_STAGED = "commit_staged";
    public static final String ABORT_STAGED = "abort_staged";
    public static final String TABLE_DETAIL = "table_detail";
    public static final String PLAN_SCAN = "plan_scan";
    public static final String STREAM_START = "stream_start";
    public static final String STREAM_LATEST = "stream_latest";
    public static final String STREAM_PLAN = "stream_plan";
    public static final String RUNTIME_FILTER = "runtime_filter";
    public static final String AGGREGATE_SCAN = "aggregate_scan";
    public static final String FILE_REPORT = "file_report";
    public static final String SYSTEM_ROWS = "system_rows";
    public static final String EXPLAIN_ROWS = "explain_rows";
    public static final String WRITE = "write";
    public static final String STREAM_WRITE = "stream_write";
    public static final String DML = "dml";
    public static final String PROCEDURE_INFO = "procedure_info";
    public static final String LIST_PROCEDURES = "list_procedures";
    public static final String CALL_PROCEDURE = "call_procedure";
    public static final String REWRITE_SQL = "rewrite_sql";
    public static final String SHOW_CREATE_TABLE = "show_create_table";
    public static final String CREATE_TABLE_LIKE = "create_table_like";
    public static final String LIST_PARTITIONS = "list_partitions";
    public static final String DROP_PARTITION = "drop_partition";
  }

  /** Operations that change nothing: safe to ask a restarted brain again. */
  public static final java.util.Set<String> READ_ONLY = java.util.Set.of(
      Op.TABLE_EXISTS,
      Op.LOAD_TABLE,
      Op.LIST_TABLES,
      Op.LIST_NAMESPACES,
      Op.NAMESPACE_EXISTS,
      Op.PLAN_SCAN,
      Op.STREAM_START,
      Op.STREAM_LATEST,
      Op.STREAM_PLAN,
      Op.RUNTIME_FILTER,
      Op.AGGREGATE_SCAN,
      Op.FILE_REPORT,
      Op.PROCEDURE_INFO,
      Op.LIST_PROCEDURES,
      Op.REWRITE_SQL,
      Op.SHOW_CREATE_TABLE,
      Op.LIST_PARTITIONS);

  /** The keys of every request and reply object. */
  public static final class Key {
    private Key() {}

    public static final String ABSENT = "absent";
    public static final String AFTER = "after";
    public static final String AGGREGATE_OVERFLOW = "aggregate_overflow";
    public static final String AGGREGATE_RETRACT = "aggregate_retract";
    public static final String AGGREGATES = "aggregates";
    public static final String ARGUMENTS = "arguments";
    public static final String BATCH_ID = "batch_id";
    public static final String BUCKET = "bucket";
    public static final String CASCADE = "cascade";
    public static final String CATALOG = "catalog";
    public static final String CATALOGS = "catalogs";
    public static final String CHANGE = "change";
    public static final String CHANGES = "changes";
    public static final String COLUMN = "column";
    public static final String COLUMNS = "columns";
    public static final String COMMENT = "comment";
    public static final String CONDITION = "condition";
    public static final String CURRENT_CATALOG = "current_catalog";
    public static final String CURRENT_NAMESPACE = "current_namespace";
    public static final String DELIMITER = "delimiter";
    public static final String DESCENDING = "descending";
    public static final String DESCRIPTION = "description";
    public static final String DIR = "dir";
    public static final String DIRS = "dirs";
    public static final String DROPPED = "dropped";
    public static final String DV = "dv";
    public static final String END = "end";
    public static final String ENGINE = "engine";
    public static final String ERROR = "error";
    public static final String ERRORS = "errors";
    public static final String EVOLVED = "evolved";
    public static final String EXISTS = "exists";
    public static final String FIELDS = "fields";
    public static final String FILES = "files";
    public static final String FILTER_COLUMNS = "filter_columns";
    public static final String FILTERS = "filters";
    public static final String FIRST_ROW_RETRACT = "first_row_retract";
    public static final String FOUND = "found";
    public static final String FULL = "full";
    public static final String FUNCTION = "function";
    public static final String GROUP = "group";
    public static final String GROUPS = "groups";
    public static final String IGNORE_DELETE = "ignore_delete";
    public static final String IGNORE_RETRACT = "ignore_retract";
    public static final String INDEX = "index";
    public static final String INDEX_BYTES_READ = "index_bytes_read";
    public static final String INDEX_FILES_READ = "index_files_read";
    public static final String INDEX_VALUES = "index_values";
    public static final String KEPT = "kept";
    public static final String KIND = "kind";
    public static final String LIMIT = "limit";
    public static final String LOCATION = "location";
    public static final String MAX_FILES = "max_files";
    public static final String MERGE = "merge";
    public static final String MESSAGE = "message";
    public static final String MODE = "mode";
    public static final String MTIME = "mtime";
    public static final String NAME = "name";
    public static final String NAMES = "names";
    public static final String NAMESPACE = "namespace";
    public static final String NAMESPACES = "namespaces";
    public static final String NEW_NAME = "new_name";
    public static final String NULLABLE = "nullable";
    public static final String NULLS_FIRST = "nulls_first";
    public static final String OPTIONS = "options";
    public static final String ORDER = "order";
    public static final String OTHER = "other";
    public static final String PARAMETERS = "parameters";
    public static final String PARTIAL_UPDATE_RETRACT = "partial_update_retract";
    public static final String PARTITION = "partition";
    public static final String PARTITION_KEYS = "partition_keys";
    public static final String PARTITIONS = "partitions";
    public static final String PATH = "path";
    public static final String PINNED = "pinned";
    public static final String PLANNING_MS = "planning_ms";
    public static final String POSITION = "position";
    public static final String PROCEDURE = "procedure";
    public static final String PROCEDURES = "procedures";
    public static final String PROPERTIES = "properties";
    public static final String PROTOCOL = "protocol";
    public static final String PRUNABLE = "prunable";
    public static final String PRUNING = "pruning";
    public static final String QUERY_ID = "query_id";
    public static final String QUERY_TAG = "query_tag";
    public static final String RECORD_COUNT = "record_count";
    public static final String REFUSED = "refused";
    public static final String REMOVE_RECORD_ON_DELETE = "remove_record_on_delete";
    public static final String REPLAYED = "replayed";
    public static final String REPORT_ID = "report_id";
    public static final String REQUIRED = "required";
    public static final String ROWS = "rows";
    public static final String RUNTIME = "runtime";
    public static final String SCHEMA = "schema";
    public static final String SCHEMA_ID = "schema_id";
    public static final String SEQUENCE = "sequence";
    public static final String SEQUENCE_DESCENDING = "sequence_descending";
    public static final String SEQUENCE_FIELDS = "sequence_fields";
    public static final String SEQUENCE_GROUPS = "sequence_groups";
    public static final String SESSION = "session";
    public static final String SET = "set";
    public static final String SETTINGS = "settings";
    public static final String SHA256 = "sha256";
    public static final String SIZE = "size";
    public static final String SNAPSHOT = "snapshot";
    public static final String SNAPSHOT_ID = "snapshot_id";
    public static final String SOURCE_NAME = "source_name";
    public static final String SOURCE_NAMESPACE = "source_namespace";
    public static final String SPARK_TYPE = "spark_type";
    public static final String SQL = "sql";
    public static final String STAGED = "staged";
    public static final String START = "start";
    public static final String START_FULL = "start_full";
    public static final String STATS = "stats";
    public static final String STORED_NAMES = "stored_names";
    public static final String STORED_SCHEMA = "stored_schema";
    public static final String STREAM_SCHEMA = "stream_schema";
    public static final String SYSTEM = "system";
    public static final String TABLES = "tables";
    public static final String TAG = "tag";
    public static final String TIME_ZONE = "time_zone";
    public static final String TIMESTAMP_MICROS = "timestamp_micros";
    public static final String TOKEN = "token";
    public static final String TOTAL = "total";
    public static final String TRIMMED_KEYS = "trimmed_keys";
    public static final String TYPE = "type";
    public static final String UNCHANGED_WHILE = "unchanged_while";
    public static final String UNPUSHABLE = "unpushable";
    public static final String UNSET = "unset";
    public static final String UNTIL = "until";
    public static final String VALUES = "values";
    public static final String VERB = "verb";
    public static final String VERSION = "version";
    public static final String WAREHOUSE = "warehouse";
  }

  /** The kinds of an error reply. */
  public static final class ErrorKind {
    private ErrorKind() {}

    public static final String TABLE_NOT_FOUND = "table_not_found";
    public static final String TABLE_ALREADY_EXISTS = "table_already_exists";
    public static final String DATABASE_NOT_FOUND = "database_not_found";
    public static final String INVALID_ARGUMENT = "invalid_argument";
    public static final String PROTOCOL_MISMATCH = "protocol_mismatch";
    public static final String UNKNOWN_OPERATION = "unknown_operation";
    public static final String BAD_REQUEST = "bad_request";
    public static final String LAKESKIP = "lakeskip_error";
    public static final String INTERNAL = "internal_error";
  }

  /** The modes of a write. */
  public static final class WriteMode {
    private WriteMode() {}

    public static final String APPEND = "append";
    public static final String TRUNCATE = "truncate";
    public static final String OVERWRITE = "overwrite";
    public static final String DYNAMIC = "dynamic";
  }

  /** The modes of a staged CTAS / RTAS. */
  public static final class StageMode {
    private StageMode() {}

    public static final String CREATE = "create";
    public static final String REPLACE = "replace";
    public static final String CREATE_OR_REPLACE = "create_or_replace";
  }

  /** The functions of a pushed aggregate. */
  public static final class AggregateKind {
    private AggregateKind() {}

    public static final String COUNT_STAR = "count_star";
    public static final String COUNT = "count";
    public static final String MIN = "min";
    public static final String MAX = "max";
  }

  /** The kinds of an ALTER TABLE column change. */
  public static final class ColumnChangeKind {
    private ColumnChangeKind() {}

    public static final String ADD = "add";
    public static final String RENAME = "rename";
    public static final String DROP = "drop";
    public static final String TYPE = "type";
    public static final String NULLABILITY = "nullability";
    public static final String COMMENT = "comment";
    public static final String POSITION = "position";
  }

  /** Table property names. */
  public static final class TableProperty {
    private TableProperty() {}

    public static final String PRIMARY_KEY = "primary-key";
    public static final String PROVIDER = "provider";
    public static final String STATE = "lakeskip.state";
    public static final String SYSTEM_TABLE = "system-table";
  }

  /** A table's kind: how its rows live in its files. */
  public enum TableKindTag {
    APPEND("append"),
    APPEND_DV("append-dv"),
    PK_MERGE("pk-merge"),
    PK_RAW("pk-raw");

    /** The value on the wire. */
    public final String wire;

    TableKindTag(String wire) {
      this.wire = wire;
    }

    /** The constant of a wire value (IllegalArgumentException for another). */
    public static TableKindTag of(String wire) {
      for (TableKindTag v : values()) {
        if (v.wire.equals(wire)) {
          return v;
        }
      }
      throw new IllegalArgumentException("unknown TableKindTag: " + wire);
    }
  }

  /** The keys of a predicate tree's nodes. */
  public static final class PredicateKey {
    private PredicateKey() {}

    public static final String REF = "ref";
    public static final String OP = "op";
    public static final String ARGS = "args";
    public static final String LIT = "lit";
    public static final String TYPE = "type";
    public static final String OTHER = "other";
    public static final String FN = "fn";
    public static final String TO = "to";
    public static final String FIELD = "field";
  }

  /** The Spark V2 predicate names Python translates (sent as Spark names them). */
  public static final class PredicateOp {
    private PredicateOp() {}

    public static final String EQ = "=";
    public static final String NE = "<>";
    public static final String NULL_SAFE_EQ = "<=>";
    public static final String LT = "<";
    public static final String LE = "<=";
    public static final String GT = ">";
    public static final String GE = ">=";
    public static final String IN = "IN";
    public static final String IS_NULL = "IS_NULL";
    public static final String IS_NOT_NULL = "IS_NOT_NULL";
    public static final String STARTS_WITH = "STARTS_WITH";
    public static final String AND = "AND";
    public static final String OR = "OR";
    public static final String NOT = "NOT";
    public static final String ALWAYS_TRUE = "ALWAYS_TRUE";
    public static final String ALWAYS_FALSE = "ALWAYS_FALSE";
  }

  /** The functions a predicate tree names that are no GeneralScalarExpression of Spark's. */
  public static final class PredicateFunction {
    private PredicateFunction() {}

    public static final String CAST = "CAST";
    public static final String EXTRACT = "EXTRACT";
    public static final String SUBSTRING = "SUBSTRING";
  }

  /** The types of a predicate tree's literals. */
  public static final class LiteralType {
    private LiteralType() {}

    public static final String NULL = "null";
    public static final String BOOLEAN = "boolean";
    public static final String INTEGER = "integer";
    public static final String FLOAT = "float";
    public static final String DOUBLE = "double";
    public static final String DECIMAL = "decimal";
    public static final String STRING = "string";
    public static final String DATE = "date";
    public static final String TIMESTAMP_LTZ = "timestamp_ltz";
    public static final String TIMESTAMP_NTZ = "timestamp_ntz";
    public static final String BINARY = "binary";
  }

  /** Separates column and key in a map-key reference: {@code attrs['device']}. */
  public static final String MAP_KEY_SEPARATOR = "\u0000";
}
