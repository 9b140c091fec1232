using System.Globalization;
using System.Text;
using Queue.Core.Ordering;

namespace Queue.Admin;

/// <summary>
/// <c>preview [--mode smallest|oldest] [--policy seed|tenant-fair] [--override JOB=VALUE]... [--task T] [--tenant NAME]
/// [--top N] [--json]</c>: what the next rewrite would write and the order claims would follow (Core's
/// <see cref="OrderingPreview"/>). Reads only.
/// </summary>
public static class PreviewCommand
{
    public const string Usage =
        "preview [--mode smallest|oldest] [--policy seed|tenant-fair] [--override JOB=VALUE]... [--task T] [--tenant NAME] [--top N] [--json]";

    /// <summary>The flags, checked before anything connects: a mistake is a usage message, not a half-run.</summary>
    /// <param name="Mode">Null: the mode of the next rewrite (the one after the current period).</param>
    public sealed record Options(string? Mode, string? Policy, Dictionary<long, long> Overrides, string? Task, string? Tenant, int Top, bool Json);

    /// <summary>Null with <paramref name="error"/> set when the flags are not valid.</summary>
    public static Options? Parse(IReadOnlyList<string> args, out string? error)
    {
        var o = new Options(null, null, [], null, null, OrderingPreview.DefaultTop, false);
        error = null;
        for (var i = 1; i < args.Count; i++)
        {
            var flag = args[i];
            if (flag.Contains('=', StringComparison.Ordinal) && !flag.StartsWith("--", StringComparison.Ordinal))
            {
                continue; // configuration (ConnectionStrings:Queue=..., Ordering:Policy=...), read by the host's rules
            }
            if (flag == "--json")
            {
                o = o with { Json = true };
                continue;
            }
            if (i + 1 >= args.Count)
            {
                error = $"{flag} needs a value";
                return null;
            }
            var value = args[++i];
            switch (flag)
            {
                case "--mode" when value is "smallest" or "oldest":
                    o = o with { Mode = value };
                    break;
                case "--policy" when value is OrderingOptions.Seed or OrderingOptions.TenantFair:
                    o = o with { Policy = value };
                    break;
                case "--task" when Queue.Core.Validation.TaskName().IsMatch(value):
                    o = o with { Task = value };
                    break;
                case "--tenant" when value.Length > 0:
                    o = o with { Tenant = value };
                    break;
                case "--top" when int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var top) && top is >= 1 and <= OrderingPreview.MaxTop:
                    o = o with { Top = top };
                    break;
                case "--override" when ParseOverride(value) is { } ov:
                    o.Overrides[ov.Job] = ov.Value;
                    break;
                default:
                    error = $"bad flag or value: {flag} {value}";
                    return null;
            }
        }
        return o;
    }

    private static (long Job, long Value)? ParseOverride(string text)
    {
        var parts = text.Split('=');
        return parts.Length == 2
            && long.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var job) && job > 0
            && long.TryParse(parts[1], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value)
            && value is >= Queue.Core.Admin.JobActions.MinPriority and <= Queue.Core.Admin.JobActions.MaxPriority
            ? (job, value) : null;
    }

    public static string Table(PreviewResult r)
    {
        var inv = CultureInfo.InvariantCulture;
        var sb = new StringBuilder();
        sb.AppendLine(inv, $"Preview: {r.Mode}-first, policy {r.Policy}, at {r.GeneratedAt:yyyy-MM-ddTHH:mm:ssZ}; {r.Jobs} jobs with work, {r.Blocked} blocked (not served).");
        sb.AppendLine(inv, $"{"pos",5}  {"job",8}  {"tenant",-16} {"items",8}  {"value",14}  {"reason",-24} name");
        foreach (var p in r.Positions)
        {
            sb.AppendLine(inv, $"{p.Position,5}  {p.JobId,8}  {Cut(p.Tenant, 16),-16} {p.ItemsLeft,8}  {p.Value,14}  {Cut(p.Reason, 24),-24} {p.Name}");
        }
        sb.AppendLine();
        sb.AppendLine(inv, $"{"tenant",-16} {"jobs",8} {"items",10} {"share",6}  {"first item",-20}  last item");
        foreach (var t in r.Tenants)
        {
            sb.AppendLine(inv, $"{Cut(t.Tenant, 16),-16} {t.Jobs,8} {t.Items,10} {t.Share,6:P0}  {Eta(t.EtaFirst),-20}  {Eta(t.EtaLast)}");
        }
        if (r.ItemsPerSecond is null)
        {
            sb.AppendLine("No ETAs: no recent throughput to measure.");
        }
        return sb.ToString();
    }

    private static string Eta(DateTime? at) => at is { } a ? a.ToString("yyyy-MM-ddTHH:mm:ssZ", CultureInfo.InvariantCulture) : "-";

    private static string Cut(string s, int max) => s.Length <= max ? s : s[..(max - 1)] + "~";
}
