using System.Text.Json;

namespace Queue.Admin.Infrastructure;

/// <summary>Turns an audit entry's before and after JSON into the fields that changed, so a reader sees "value: 120 → -1".</summary>
public static class AuditDiff
{
    public static IReadOnlyList<(string Field, string? Before, string? After)> Changes(string? beforeJson, string? afterJson)
    {
        var before = Flatten(beforeJson);
        var after = Flatten(afterJson);
        var result = new List<(string, string?, string?)>();
        foreach (var key in before.Keys.Union(after.Keys, StringComparer.Ordinal))
        {
            var b = before.GetValueOrDefault(key);
            var a = after.GetValueOrDefault(key);
            if (!string.Equals(a, b, StringComparison.Ordinal))
            {
                result.Add((key, b, a));
            }
        }
        return result;
    }

    private static Dictionary<string, string> Flatten(string? json)
    {
        var result = new Dictionary<string, string>(StringComparer.Ordinal);
        if (string.IsNullOrEmpty(json))
        {
            return result;
        }
        try
        {
            using var doc = JsonDocument.Parse(json);
            Walk(doc.RootElement, "", result);
        }
        catch (JsonException)
        {
            result["(raw)"] = json; // written by something else: show it as it is
        }
        return result;
    }

    private static void Walk(JsonElement e, string prefix, Dictionary<string, string> into)
    {
        switch (e.ValueKind)
        {
            case JsonValueKind.Object:
                foreach (var p in e.EnumerateObject())
                {
                    Walk(p.Value, prefix.Length == 0 ? p.Name : prefix + "." + p.Name, into);
                }
                break;
            case JsonValueKind.String:
                into[prefix] = e.GetString() ?? "";
                break;
            default:
                into[prefix] = e.GetRawText();
                break;
        }
    }
}
