namespace Queue.Bench.Harness;

/// <summary>The scenarios' command-line options.</summary>
public static class BenchArgs
{
    /// <summary>The value after <paramref name="name"/> (<c>--jobs 1000</c>), or null when it is not given.</summary>
    public static string? Option(string[] args, string name)
    {
        var i = Array.IndexOf(args, name);
        return i >= 0 && i + 1 < args.Length ? args[i + 1] : null;
    }

    /// <summary>Every value of a repeatable option (<c>--set A=1 --set B=2</c>), in order.</summary>
    public static List<string> Options(string[] args, string name) =>
        args.SkipLast(1).Select((a, i) => (a, i)).Where(x => x.a == name).Select(x => args[x.i + 1]).ToList();
}
