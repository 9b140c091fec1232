using System.Net;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using Microsoft.Extensions.DependencyInjection;
using Queue.Core.Jobs;
using Queue.Local;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>Documents at the 16 MiB limit go through the streamed path whole and intact (memory is measured by the upload benchmark).</summary>
public sealed class LargeDocumentTests(KestrelApiFixture fx) : IClassFixture<KestrelApiFixture>
{
    private const int DocumentBytes = 16 * 1024 * 1024;

    [Fact]
    public async Task Three_16_MiB_documents_in_one_multipart_upload_are_stored_and_downloaded_byte_for_byte()
    {
        var (_, key) = await fx.NewCustomerAsync();
        using var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{fx.Port}") };
        http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        var job = await http.OpenJobAsync(["text"]);
        using var form = new MultipartFormDataContent();
        for (var i = 0; i < 3; i++)
        {
            var part = new StreamContent(new PatternStream(DocumentBytes, (byte)i), 64 * 1024);
            part.Headers.ContentType = new MediaTypeHeaderValue("application/octet-stream");
            form.Add(part, "file", $"big{i}.bin");
        }
        var r = await http.PostAsync(U($"/jobs/{job}/documents"), form);
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var docs = (await r.BodyAsync()).GetProperty("documents").EnumerateArray().ToList();
        Assert.Equal(3, docs.Count);
        Assert.All(docs, d => Assert.Equal(DocumentBytes, d.GetProperty("size").GetInt64()));

        using var expected = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        var pattern = new PatternStream(DocumentBytes, 2);
        var buffer = new byte[64 * 1024];
        int n;
        while ((n = await pattern.ReadAsync(buffer)) > 0)
        {
            expected.AppendData(buffer, 0, n);
        }
        var sha = Convert.ToHexStringLower(expected.GetHashAndReset());
        Assert.Equal(sha, docs[2].GetProperty("sha256").GetString());
        var download = await http.GetAsync(U($"/jobs/{job}/documents/{docs[2].GetProperty("id").GetInt64()}"), HttpCompletionOption.ResponseHeadersRead);
        Assert.Equal(DocumentBytes, download.Content.Headers.ContentLength);
        Assert.Equal(sha, Convert.ToHexStringLower(await SHA256.HashDataAsync(await download.Content.ReadAsStreamAsync())));
    }
}
