import org.apache.paimon.data.*;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.types.*;
import org.apache.paimon.utils.SerializationUtils;
import java.math.BigDecimal;

public class GenBinaryRow {
    static String hex(byte[] b) { StringBuilder sb = new StringBuilder(); for (byte x : b) sb.append(String.format("%02x", x)); return sb.toString(); }
    static void emit(String name, DataType[] types, Object... values) {
        InternalRowSerializer ser = new InternalRowSerializer(types);
        BinaryRow row = ser.toBinaryRow(GenericRow.of(values)).copy();
        System.out.println(name + " " + hex(SerializationUtils.serializeBinaryRow(row)));
    }
    public static void main(String[] a) {
        emit("empty", new DataType[0]);
        emit("primitives", new DataType[]{DataTypes.BOOLEAN(), DataTypes.TINYINT(), DataTypes.SMALLINT(), DataTypes.INT(), DataTypes.BIGINT(), DataTypes.FLOAT(), DataTypes.DOUBLE(), DataTypes.DATE()},
             true, (byte) -5, (short) -300, 123456, -9000000000000000L, 1.5f, -2.25d, 19723);
        emit("strings", new DataType[]{DataTypes.STRING(), DataTypes.STRING(), DataTypes.STRING(), DataTypes.STRING(), DataTypes.BYTES(), DataTypes.BYTES(), DataTypes.STRING()},
             BinaryString.fromString(""), BinaryString.fromString("abc"), BinaryString.fromString("hello world!"), BinaryString.fromString("h\u00e9llo w\u00f6rld \u4e2d\ud83d\ude00"), new byte[]{1,2,3}, new byte[]{0,1,2,3,4,5,6,7,8,9}, BinaryString.fromString("1234567"));
        emit("decimals", new DataType[]{DataTypes.DECIMAL(10,2), DataTypes.DECIMAL(10,2), DataTypes.DECIMAL(38,10), DataTypes.DECIMAL(38,0), DataTypes.DECIMAL(20,2), DataTypes.DECIMAL(38,0), DataTypes.DECIMAL(18,0)},
             Decimal.fromBigDecimal(new BigDecimal("123.45"),10,2), Decimal.fromBigDecimal(new BigDecimal("-0.01"),10,2),
             Decimal.fromBigDecimal(new BigDecimal("1234567890123456789.0123456789"),38,10), Decimal.fromBigDecimal(new BigDecimal("-128"),38,0), null,
             Decimal.fromBigDecimal(new BigDecimal("0"),38,0), Decimal.fromBigDecimal(new BigDecimal("-999999999999999999"),18,0));
        emit("timestamps", new DataType[]{DataTypes.TIMESTAMP(3), DataTypes.TIMESTAMP(6), DataTypes.TIMESTAMP(6), DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(6), DataTypes.TIMESTAMP(0), DataTypes.TIMESTAMP(6)},
             Timestamp.fromEpochMillis(1700000000123L), Timestamp.fromEpochMillis(1700000000123L, 456000), null, Timestamp.fromEpochMillis(-1L, 999000), Timestamp.fromEpochMillis(86400000L), Timestamp.fromEpochMillis(-1700000000124L, 1000));
        emit("nulls", new DataType[]{DataTypes.INT(), DataTypes.STRING(), DataTypes.BIGINT(), DataTypes.DOUBLE()}, null, null, 7L, null);
        DataType[] many = new DataType[60]; Object[] vals = new Object[60];
        for (int i = 0; i < 60; i++) { many[i] = DataTypes.INT(); vals[i] = (i % 7 == 3) ? null : (Object) (i * 1000 - 5); }
        emit("wide60", many, vals);
        emit("partition_dt", new DataType[]{DataTypes.STRING(), DataTypes.INT()}, BinaryString.fromString("2024-01-01"), 3);
    }
}
