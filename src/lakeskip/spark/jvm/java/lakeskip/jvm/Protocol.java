// Generated from lakeskip/spark/jvm/protocol.py by `python -m lakeskip.spark.jvm.protocol_java`: do not edit.
package lakeskip.jvm;

/**
 * The Python–JVM protocol's constants: operations, JSON keys, error kinds, the version
 * and shared property names. Every other class uses these, never a literal; the types
 * of each operation's JSON are in {@code lakeskip.spark.jvm.protocol}.
 */
final class Protocol {
  private Protocol() {}

  /** Version of the JSON protocol; Python checks it on every callback. */
  static final int VERSION = 1;

  /** Spark local property correlating callbacks with the query's Python thread. */
  static final String TAG_PROPERTY = "lakeskip.query.tag";

  /** Operation names ({@link PythonBridge#call}). */
  static final class Op {
    private Op() {}

    static final String TABLE_EXISTS = "table_exists";
    static final String LOAD_TABLE = "load_table";
    static final String CREATE_TABLE = "create_table";
    static final String ALTER_TABLE = "alter_table";
    static final String DROP_TABLE = "drop_table";
    static final String LIST_TABLES = "list_tables";
    static final String LIST_NAMESPACES = "list_namespaces";
    static final String NAMESPACE_EXISTS = "namespace_exists";
    static final String CREATE_NAMESPACE = "create_namespace";
    static final String DROP_NAMESPACE = "drop_namespace";
    static final String STAGE_TABLE = "stage_table";
    static final String COMMIT_STAGED = "commit_staged";
    static final String ABORT_STAGED = "abort_staged";
    static final String TABLE_DETAIL = "table_detail";
    static final String PLAN_SCAN = "plan_scan";
    static final String AGGREGATE_SCAN = "aggregate_scan";
    static final String FILE_REPORT = "file_report";
    static final String SYSTEM_ROWS = "system_rows";
    static final String EXPLAIN_ROWS = "explain_rows";
    static final String WRITE = "write";
    static final String STREAM_WRITE = "stream_write";
    static final String DML = "dml";
    static final String PROCEDURE_INFO = "procedure_info";
    static final String LIST_PROCEDURES = "list_procedures";
    static final String CALL_PROCEDURE = "call_procedure";
    static final String REWRITE_SQL = "rewrite_sql";
  }

  /** Operations that change nothing: safe to ask a restarted brain again. */
  static final java.util.Set<String> READ_ONLY = java.util.Set.of(
      Op.TABLE_EXISTS,
      Op.LOAD_TABLE,
      Op.LIST_TABLES,
      Op.LIST_NAMESPACES,
      Op.NAMESPACE_EXISTS,
      Op.PLAN_SCAN,
      Op.AGGREGATE_SCAN,
      Op.FILE_REPORT,
      Op.PROCEDURE_INFO,
      Op.LIST_PROCEDURES,
      Op.REWRITE_SQL);

  /** The keys of every request and reply object. */
  static final class Key {
    private Key() {}

    static final String ABSENT = "absent";
    static final String AGGREGATE_OVERFLOW = "aggregate_overflow";
    static final String AGGREGATE_RETRACT = "aggregate_retract";
    static final String AGGREGATES = "aggregates";
    static final String ARGUMENTS = "arguments";
    static final String BATCH_ID = "batch_id";
    static final String BUCKET = "bucket";
    static final String CASCADE = "cascade";
    static final String CATALOG = "catalog";
    static final String CATALOGS = "catalogs";
    static final String COLUMN = "column";
    static final String CONDITION = "condition";
    static final String CURRENT_CATALOG = "current_catalog";
    static final String CURRENT_NAMESPACE = "current_namespace";
    static final String DELIMITER = "delimiter";
    static final String DESCRIPTION = "description";
    static final String DROPPED = "dropped";
    static final String DV = "dv";
    static final String ENGINE = "engine";
    static final String ERROR = "error";
    static final String ERRORS = "errors";
    static final String EXISTS = "exists";
    static final String FIELDS = "fields";
    static final String FILES = "files";
    static final String FILTER_COLUMNS = "filter_columns";
    static final String FILTERS = "filters";
    static final String FIRST_ROW_RETRACT = "first_row_retract";
    static final String FOUND = "found";
    static final String FUNCTION = "function";
    static final String GROUP = "group";
    static final String IGNORE_DELETE = "ignore_delete";
    static final String IGNORE_RETRACT = "ignore_retract";
    static final String INDEX = "index";
    static final String INDEX_BYTES_READ = "index_bytes_read";
    static final String INDEX_FILES_READ = "index_files_read";
    static final String KEPT = "kept";
    static final String KIND = "kind";
    static final String LOCATION = "location";
    static final String MERGE = "merge";
    static final String MESSAGE = "message";
    static final String MODE = "mode";
    static final String MTIME = "mtime";
    static final String NAME = "name";
    static final String NAMESPACE = "namespace";
    static final String NAMESPACES = "namespaces";
    static final String OTHER = "other";
    static final String PARAMETERS = "parameters";
    static final String PARTIAL_UPDATE_RETRACT = "partial_update_retract";
    static final String PARTITION = "partition";
    static final String PARTITION_KEYS = "partition_keys";
    static final String PARTITIONS = "partitions";
    static final String PATH = "path";
    static final String PINNED = "pinned";
    static final String PLANNING_MS = "planning_ms";
    static final String PROCEDURE = "procedure";
    static final String PROCEDURES = "procedures";
    static final String PROPERTIES = "properties";
    static final String PROTOCOL = "protocol";
    static final String PRUNING = "pruning";
    static final String QUERY_ID = "query_id";
    static final String QUERY_TAG = "query_tag";
    static final String REFUSED = "refused";
    static final String REMOVE_RECORD_ON_DELETE = "remove_record_on_delete";
    static final String REPLAYED = "replayed";
    static final String REPORT_ID = "report_id";
    static final String REQUIRED = "required";
    static final String ROWS = "rows";
    static final String SCHEMA = "schema";
    static final String SEQUENCE = "sequence";
    static final String SEQUENCE_DESCENDING = "sequence_descending";
    static final String SEQUENCE_FIELDS = "sequence_fields";
    static final String SEQUENCE_GROUPS = "sequence_groups";
    static final String SESSION = "session";
    static final String SET = "set";
    static final String SETTINGS = "settings";
    static final String SHA256 = "sha256";
    static final String SIZE = "size";
    static final String SNAPSHOT = "snapshot";
    static final String SNAPSHOT_ID = "snapshot_id";
    static final String SQL = "sql";
    static final String STAGED = "staged";
    static final String STATS = "stats";
    static final String SYSTEM = "system";
    static final String TABLES = "tables";
    static final String TAG = "tag";
    static final String TIME_ZONE = "time_zone";
    static final String TIMESTAMP_MICROS = "timestamp_micros";
    static final String TOKEN = "token";
    static final String TOTAL = "total";
    static final String TRIMMED_KEYS = "trimmed_keys";
    static final String TYPE = "type";
    static final String UNCHANGED_WHILE = "unchanged_while";
    static final String UNPUSHABLE = "unpushable";
    static final String UNSET = "unset";
    static final String VALUES = "values";
    static final String VERB = "verb";
    static final String VERSION = "version";
    static final String WAREHOUSE = "warehouse";
  }

  /** The kinds of an error reply. */
  static final class ErrorKind {
    private ErrorKind() {}

    static final String TABLE_NOT_FOUND = "table_not_found";
    static final String TABLE_ALREADY_EXISTS = "table_already_exists";
    static final String DATABASE_NOT_FOUND = "database_not_found";
    static final String INVALID_ARGUMENT = "invalid_argument";
    static final String PROTOCOL_MISMATCH = "protocol_mismatch";
    static final String UNKNOWN_OPERATION = "unknown_operation";
    static final String BAD_REQUEST = "bad_request";
    static final String LAKESKIP = "lakeskip_error";
    static final String INTERNAL = "internal_error";
  }

  /** The modes of a write. */
  static final class WriteMode {
    private WriteMode() {}

    static final String APPEND = "append";
    static final String TRUNCATE = "truncate";
    static final String OVERWRITE = "overwrite";
  }

  /** The modes of a staged CTAS / RTAS. */
  static final class StageMode {
    private StageMode() {}

    static final String CREATE = "create";
    static final String REPLACE = "replace";
    static final String CREATE_OR_REPLACE = "create_or_replace";
  }

  /** The functions of a pushed aggregate. */
  static final class AggregateKind {
    private AggregateKind() {}

    static final String COUNT_STAR = "count_star";
    static final String COUNT = "count";
    static final String MIN = "min";
    static final String MAX = "max";
  }

  /** Table property names. */
  static final class TableProperty {
    private TableProperty() {}

    static final String PRIMARY_KEY = "primary-key";
    static final String PROVIDER = "provider";
    static final String STATE = "lakeskip.state";
    static final String SYSTEM_TABLE = "system-table";
  }

  /** The keys of a predicate tree's nodes. */
  static final class PredicateKey {
    private PredicateKey() {}

    static final String REF = "ref";
    static final String OP = "op";
    static final String ARGS = "args";
    static final String LIT = "lit";
    static final String TYPE = "type";
    static final String OTHER = "other";
  }

  /** The Spark V2 predicate names Python translates (sent as Spark names them). */
  static final class PredicateOp {
    private PredicateOp() {}

    static final String EQ = "=";
    static final String NE = "<>";
    static final String NULL_SAFE_EQ = "<=>";
    static final String LT = "<";
    static final String LE = "<=";
    static final String GT = ">";
    static final String GE = ">=";
    static final String IN = "IN";
    static final String IS_NULL = "IS_NULL";
    static final String IS_NOT_NULL = "IS_NOT_NULL";
    static final String STARTS_WITH = "STARTS_WITH";
    static final String AND = "AND";
    static final String OR = "OR";
    static final String NOT = "NOT";
    static final String ALWAYS_TRUE = "ALWAYS_TRUE";
    static final String ALWAYS_FALSE = "ALWAYS_FALSE";
  }

  /** The types of a predicate tree's literals. */
  static final class LiteralType {
    private LiteralType() {}

    static final String NULL = "null";
    static final String BOOLEAN = "boolean";
    static final String INTEGER = "integer";
    static final String FLOAT = "float";
    static final String DOUBLE = "double";
    static final String DECIMAL = "decimal";
    static final String STRING = "string";
    static final String DATE = "date";
    static final String TIMESTAMP_LTZ = "timestamp_ltz";
    static final String TIMESTAMP_NTZ = "timestamp_ntz";
    static final String BINARY = "binary";
  }

  /** Separates column and key in a map-key reference: {@code attrs['device']}. */
  static final String MAP_KEY_SEPARATOR = "\u0000";
}
