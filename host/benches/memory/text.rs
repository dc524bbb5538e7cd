//! Deterministic text generation: English-like sentences whose words follow a Zipf law over
//! a frequency-ordered word list, so BM25 sees realistic term frequencies (a few very common
//! words, a long tail of rare ones) and MiniLM sees ordinary English tokens.

use std::collections::HashSet;

/// About 900 English words, most frequent first (function words lead, as in real text; the
/// keyword analyzer drops those as stop words).
const WORDS: &str = "
the of and to a in is it you that he was for on are with as his they be at one have this
from or had by hot word but what some we can out other were all there when up use your how
said an each she which do their time if will way about many then them write would like so
these her long make thing see him two has look more day could go come did number sound no
most people my over know water than call first who may down side been now find any new work
part take get place made live where after back little only round man year came show every
good me give our under name very through just form sentence great think say help low line
differ turn cause much mean before move right boy old too same tell does set three want air
well also play small end put home read hand port large spell add even land here must big
high such follow act why ask men change went light kind off need house picture try us again
animal point mother world near build self earth father head stand own page should country
found answer school grow study still learn plant cover food sun four between state keep eye
never last let thought city tree cross farm hard start might story saw far sea draw left late
run while press close night real life few north open seem together next white children begin
got walk example ease paper group always music those both mark often letter until mile river
car feet care second book carry took science eat room friend began idea fish mountain stop
once base hear horse cut sure watch color face wood main enough plain girl usual young ready
above ever red list though feel talk bird soon body dog family direct pose leave song measure
door product black short numeral class wind question happen complete ship area half rock order
fire south problem piece told knew pass since top whole king space heard best hour better true
during hundred five remember step early hold west ground interest reach fast verb sing listen
six table travel less morning ten simple several vowel toward war lay against pattern slow
center love person money serve appear road map rain rule govern pull cold notice voice unit
power town fine certain fly fall lead cry dark machine note wait plan figure star box noun
field rest correct able pound done beauty drive stood contain front teach week final gave green
quick develop ocean warm free minute strong special mind behind clear tail produce fact street
inch multiply nothing course stay wheel full force blue object decide surface deep moon island
foot system busy test record boat common gold possible plane stead dry wonder laugh thousand
ago ran check game shape equate miss brought heat snow tire bring yes distant fill east paint
language among grand ball yet wave drop heart present heavy dance engine position arm wide sail
material size vary settle speak weight general ice matter circle pair include divide syllable
felt perhaps pick sudden count square reason length represent art subject region energy hunt
probable bed brother egg ride cell believe fraction forest sit race window store summer train
sleep prove lone exercise wall catch mount wish sky board joy winter sat written wild instrument
kept glass grass cow job edge sign visit past soft fun bright gas weather month million bear
finish happy hope flower clothe strange gone jump baby eight village meet root buy raise solve
metal whether push seven paragraph third shall held hair describe cook floor either result burn
hill safe cat century consider type law bit coast copy phrase silent tall sand soil roll
temperature finger industry value fight lie beat excite natural view sense ear else quite broke
case middle kill son lake moment scale loud spring observe child straight consonant nation
dictionary milk speed method organ pay age section dress cloud surprise quiet stone tiny climb
cool design poor lot experiment bottom key iron single stick flat twenty skin smile crease hole
trade melody trip office receive row mouth exact symbol die least trouble shout except wrote
seed tone join suggest clean break lady yard rise bad blow oil blood touch grew cent mix team
wire cost lost brown wear garden equal sent choose fell fit flow fair bank collect save control
decimal gentle woman captain practice separate difficult doctor please protect noon whose locate
ring character insect caught period indicate radio spoke atom human history effect electric
expect crop modern element hit student corner party supply bone rail imagine provide agree thus
capital chair danger fruit rich thick soldier process operate guess necessary sharp wing create
neighbor wash bat rather crowd corn compare poem string bell depend meat rub tube famous dollar
stream fear sight thin triangle planet hurry chief colony clock mine tie enter major fresh search
send yellow gun allow print dead spot desert suit current lift rose continue block chart hat
sell success company subtract event particular deal swim term opposite wife shoe shoulder spread
arrange camp invent cotton born determine quart nine truck noise level chance gather shop
stretch throw shine property column molecule select wrong gray repeat require broad prepare salt
nose plural anger claim continent oxygen sugar death pretty skill women season solution magnet
silver thank branch match suffix especially fig afraid huge sister steel discuss forward similar
guide experience score apple bought led pitch coat mass card band rope slip win dream evening
condition feed tool total basic smell valley nor double seat arrive master track parent shore
division sheet substance favor connect post spend chord fat glad original share station dad
bread charge proper bar offer segment slave duck instant market degree populate chick dear enemy
reply drink occur support speech nature range steam motion path liquid log meant quotient teeth
shell neck deploy server invoice meeting deadline password backup database customer budget
laptop calendar vendor contract ticket release migration outage dashboard sprint roadmap
";

/// Words of the list, most frequent first.
pub fn words() -> Vec<&'static str> {
    WORDS.split_whitespace().collect()
}

/// SplitMix64: tiny, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi].
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// Samples word ranks with P(rank r) ∝ 1/(r+1) (Zipf, s = 1) by inverting the CDF table.
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (0..n)
            .map(|r| {
                acc += 1.0 / (r + 1) as f64;
                acc
            })
            .collect();
        cdf.iter_mut().for_each(|c| *c /= acc);
        Self { cdf }
    }

    pub fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

/// Generates memory texts and queries.
pub struct Texts {
    words: Vec<&'static str>,
    zipf: Zipf,
    /// Queries skip the most common words (mostly stop words) like people's queries do.
    query_zipf: Zipf,
    rng: Rng,
}

/// Words at the head of the list that queries skip.
const QUERY_SKIP: usize = 40;

impl Texts {
    pub fn new(seed: u64) -> Self {
        let words = words();
        let n = words.len();
        Self {
            zipf: Zipf::new(n),
            query_zipf: Zipf::new(n - QUERY_SKIP),
            words,
            rng: Rng::new(seed),
        }
    }

    /// A sentence of `lo..=hi` words, capitalised, with a full stop.
    pub fn sentence(&mut self, lo: usize, hi: usize) -> String {
        let n = self.rng.range(lo, hi);
        let mut s = String::new();
        for i in 0..n {
            let w = self.words[self.zipf.sample(&mut self.rng)];
            if i == 0 {
                let mut c = w.chars();
                s.extend(c.next().map(|c| c.to_ascii_uppercase()));
                s.push_str(c.as_str());
            } else {
                s.push(' ');
                s.push_str(w);
            }
        }
        s.push('.');
        s
    }

    /// A memory value: one or two sentences, 8 to 30 words in all.
    pub fn memory_value(&mut self) -> String {
        let first = self.sentence(8, 16);
        match self.rng.range(0, 2) {
            0 => first,
            _ => format!("{first} {}", self.sentence(4, 14)),
        }
    }

    /// `n` queries none of which is in `seen` (they are added to it): a bench's never-seen
    /// queries, which no cache has answered before.
    pub fn fresh_queries(&mut self, seen: &mut HashSet<String>, n: usize) -> Vec<String> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let q = self.query();
            if seen.insert(q.clone()) {
                out.push(q);
            }
        }
        out
    }

    /// A search query of 2 to 6 content words.
    pub fn query(&mut self) -> String {
        let n = self.rng.range(2, 6);
        let q: Vec<&str> = (0..n)
            .map(|_| self.words[QUERY_SKIP + self.query_zipf.sample(&mut self.rng)])
            .collect();
        q.join(" ")
    }

    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }
}
