package lakeskip.jvm.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import lakeskip.jvm.bridge.Bridge;

/**
 * Reads replies (one JSON a line on stdin) as the bridge does ({@link Bridge#read}: each
 * {@code files} object parsed token by token) and as a Jackson tree ({@code readTree}, then
 * {@link ScanFiles#of(JsonNode)}); writes a line per reply: whether the two are equal, and
 * each file of the streamed one (path, size, mtime, partition values, group).
 */
public final class ScanFilesCheck {
  public static void main(String[] args) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      JsonNode streamed = Bridge.read(line);
      ScanFiles tree = ScanFiles.of(Bridge.JSON.readTree(line).path("files"));
      ScanFiles files = ScanFiles.of(streamed.path("files"));
      ObjectNode o = Bridge.JSON.createObjectNode();
      o.put("equal", files.equals(tree) && tree.equals(files)
          && files.hashCode() == tree.hashCode());
      o.put("pojo", streamed.path("files").isPojo());
      o.put("group_pojo", streamed.path("groups").path(0).path("files").isPojo());
      o.set("rest", streamed.path("rest"));
      o.put("rest_equal", streamed.path("rest").equals(Bridge.JSON.readTree(line).path("rest")));
      ArrayNode rows = o.putArray("files");
      for (int i = 0; i < files.size(); i++) {
        ArrayNode r = rows.addArray();
        r.add(files.path(i));
        r.add(files.fileSize(i));
        r.add(files.mtime(i));
        r.add(files.partitionValues(files.partition(i)));
        r.add(files.group(i));
      }
      out.println(o);
    }
  }
}
