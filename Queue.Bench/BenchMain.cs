namespace Queue.Bench;

public static class BenchMain
{
    public static int Run(string[] args)
    {
        Console.Error.WriteLine("usage: dotnet run -c Release --project Queue.Bench -- <ingest|upload|status|claim|rewrite|simulate>");
        return args.Length == 0 ? 64 : 64;
    }
}
