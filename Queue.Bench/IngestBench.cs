using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using Queue.Bench.Harness;

namespace Queue.Bench;

/// <summary>
/// Batched ingest: POST /jobs with 1,000 inline 1 KiB documents (base64) per request, one task, from a few concurrent
/// clients. Target: at least 20,000 items/s.
/// </summary>
public static class IngestBench
{
    private const int DocumentsPerRequest = 1000;
    private const int DocumentBytes = 1024;
    private const int Concurrency = 4;

    public static async Task<int> RunAsync(string[] args)
    {
        var duration = TimeSpan.FromSeconds(args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : 30);
        await using var env = await BenchEnvironment.StartAsync();
        await using var db = SubmitBenchKit.DataSource(env);
        var (_, key) = await SubmitBenchKit.CustomerAsync(db, "ingest", ["text"]);
        var api = await env.StartServiceAsync();
        using var http = SubmitBenchKit.Client(api.Url, key, Concurrency);
        var body = Body();
        Console.WriteLine($"ingest: POST /jobs, {DocumentsPerRequest} x {DocumentBytes} B inline documents ({body.Length / 1048576.0:F2} MB JSON), 1 task, {Concurrency} clients, {duration.TotalSeconds:F0} s");

        await LoadAsync(http, body, TimeSpan.FromSeconds(5), Report.NewHistogram()); // warm-up: JIT, pools, buffer pool pages
        var latency = Report.NewHistogram();
        long items;
        double elapsed;
        await using (var rss = new RssSampler(api.RssBytes))
        {
            var sw = Stopwatch.StartNew();
            var ok = await LoadAsync(http, body, duration, latency);
            elapsed = sw.Elapsed.TotalSeconds;
            items = ok * DocumentsPerRequest;
            var report = new Report();
            Console.WriteLine();
            Report.Row("POST /jobs (1,000 docs per request)", ok / elapsed, latency, rss.Peak);
            Report.Row("  items created", items / elapsed, latency, rss.Peak, "items/s");
            var perSecond = items / elapsed;
            report.Target("ingest-items-per-second", perSecond.ToString("N0", CultureInfo.InvariantCulture) + " items/s", ">= 20,000 items/s", perSecond >= 20_000);
            return report.Finish();
        }
    }

    private static async Task<long> LoadAsync(HttpClient http, byte[] body, TimeSpan duration, HdrHistogram.LongConcurrentHistogram latency)
    {
        long ok = 0;
        var until = Stopwatch.GetTimestamp() + (long)(duration.TotalSeconds * Stopwatch.Frequency);
        var workers = Enumerable.Range(0, Concurrency).Select(async _ =>
        {
            while (Stopwatch.GetTimestamp() < until)
            {
                using var content = new ByteArrayContent(body);
                content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/json");
                var start = Stopwatch.GetTimestamp();
                using var r = await http.PostAsync(new Uri("/jobs", UriKind.Relative), content);
                Report.Record(latency, start);
                if (r.StatusCode != HttpStatusCode.Created)
                {
                    throw new InvalidOperationException($"POST /jobs answered {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
                }
                Interlocked.Increment(ref ok);
            }
        });
        await Task.WhenAll(workers);
        return ok;
    }

    private static byte[] Body()
    {
        var random = new Random(42);
        var doc = new byte[DocumentBytes];
        var sb = new StringBuilder("""{"name":"ingest","tasks":["text"],"documents":[""");
        for (var i = 0; i < DocumentsPerRequest; i++)
        {
            random.NextBytes(doc);
            sb.Append(i == 0 ? "" : ",").Append("""{"name":"d""").Append(i).Append(".bin\",\"contentType\":\"application/octet-stream\",\"content\":\"")
                .Append(Convert.ToBase64String(doc)).Append("\"}");
        }
        return Encoding.UTF8.GetBytes(sb.Append("]}").ToString());
    }
}
