using System.Net;
using System.Net.Http.Headers;
using Queue.Core.Security;

namespace Queue.Tests.Admin;

internal static class UriExtensions
{
    public static string PathAndQuery(this Uri uri) => uri.IsAbsoluteUri ? uri.PathAndQuery : uri.OriginalString;
}
